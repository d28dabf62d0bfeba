/* check_threads: two threads that each spend a known CPU time, one of them with every signal blocked (as the lab's
 * background thread): sampler.so must give the blocked thread about twice the main thread's samples (check.sh). */
#include <pthread.h>
#include <signal.h>
#include <time.h>
static volatile double sink;
static void spin(double s){ struct timespec a,b; clock_gettime(CLOCK_THREAD_CPUTIME_ID,&a); do { for(int i=0;i<100000;i++) sink+=i*0.5; clock_gettime(CLOCK_THREAD_CPUTIME_ID,&b);} while((b.tv_sec-a.tv_sec)+(b.tv_nsec-a.tv_nsec)*1e-9 < s); }
static void *bg(void *p){ (void)p; sigset_t all; sigfillset(&all); pthread_sigmask(SIG_BLOCK,&all,NULL); spin(1.0); return NULL; }
int main(void){ pthread_t t; pthread_create(&t,NULL,bg,NULL); spin(0.5); pthread_join(t,NULL); return 0; }
