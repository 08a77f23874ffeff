// The floor under opq's 1-slot round trip: libzmq alone, a DEALER <-> ROUTER ping-pong of one 64-byte
// message over ipc:// between two processes (what a coordinator <-> worker round trip costs in libzmq's
// I/O threads and the kernel, with no opq code at all). Prints round trips per second, latency p50/p99
// and the CPU time per round trip on each side (process CPU: the socket thread and libzmq's I/O thread).
//
//   cc -O2 -o /tmp/zmq-pingpong scripts/zmq-pingpong.c -lzmq && /tmp/zmq-pingpong 20000 ipc:///tmp/pp.ipc
//
// Not built by SwiftPM or CI. Seventh session, this 2-core machine: quiet (load 2.3) 23.4k-24.0k round
// trips/s, p50 40.5-42.0 us, p99 60-63 us, 20.7-21.3 us CPU per round trip on each side; two pairs at once
// 24k each (48k/s: both cores full). Shared with builds (load 7-13): 3.8k-22k/s, p50 40-44 us, 21-38 us
// CPU a side. So a round trip costs ~42 us of CPU in libzmq and the kernel alone, and a chain of round
// trips cannot beat ~24k links/s.

#include <zmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <sys/resource.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static double cpu(void){struct rusage r;getrusage(RUSAGE_SELF,&r);return r.ru_utime.tv_sec+r.ru_stime.tv_sec+(r.ru_utime.tv_usec+r.ru_stime.tv_usec)*1e-6;}
static int cmp(const void*a,const void*b){double x=*(const double*)a,y=*(const double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
  int n=argc>1?atoi(argv[1]):20000; const char*ep=argc>2?argv[2]:"ipc:///tmp/opq-zmq-pingpong.ipc";
  pid_t pid=fork();
  if(pid==0){ // router: echo
    void*c=zmq_ctx_new(); void*r=zmq_socket(c,ZMQ_ROUTER); zmq_bind(r,ep);
    char id[256],buf[256];
    for(int i=0;i<n+1;i++){int il=zmq_recv(r,id,sizeof id,0);int bl=zmq_recv(r,buf,sizeof buf,0);
      zmq_send(r,id,il,ZMQ_SNDMORE);zmq_send(r,buf,bl,0);}
    double c1=cpu(); fprintf(stderr,"router cpu %.2f us/rt\n",c1*1e6/(n+1));
    zmq_close(r);zmq_ctx_term(c);_exit(0);
  }
  void*c=zmq_ctx_new(); void*d=zmq_socket(c,ZMQ_DEALER); zmq_connect(d,ep);
  char buf[256]; memset(buf,'x',64);
  zmq_send(d,buf,64,0); zmq_recv(d,buf,sizeof buf,0); // warm-up
  double t0=now(), c0=cpu();
  double *lat=malloc(sizeof(double)*n);
  for(int i=0;i<n;i++){double a=now();zmq_send(d,buf,64,0);zmq_recv(d,buf,sizeof buf,0);lat[i]=now()-a;}
  double t1=now(), c1=cpu();
  qsort(lat,n,sizeof(double),cmp);
  printf("%d round trips: %.0f rt/s, %.1f us/rt mean, p50 %.1f us, p99 %.1f us, dealer cpu %.2f us/rt\n",n,n/(t1-t0),(t1-t0)*1e6/n,lat[n/2]*1e6,lat[n*99/100]*1e6,(c1-c0)*1e6/n);
  zmq_close(d);zmq_ctx_term(c);waitpid(pid,0,0);return 0;
}
