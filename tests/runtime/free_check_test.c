/* Double and invalid frees of pooled objects (issue 19): the runtime must stop them as
 * glibc stops its own, with a message and abort(), and must never stop a valid program.
 *
 *   free_check_test MODE
 *
 * MODE is one of
 *   double         free(p); free(p)
 *   double-later   free(p); free(q); free(p)
 *   interior       free(p + 16) of a 64-byte object
 *   sized-double   operator delete(p, 40) twice (through dlsym: this is a C program)
 *   remote-double  p allocated by a thread that is still running, freed twice by main
 *   realloc-freed  realloc of a freed object
 *   valid          many valid frees of every kind; prints "ok"
 * A bad free that is not stopped prints "not detected" and the program exits 0. Run with
 * HEAPLAYOUT_MIN_OBJECTS=0 so that every allocation at a site is pooled. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* two allocation sites; not tail calls, so that malloc returns into them */
__attribute__((noinline, noipa)) static void *site_a(size_t size) {
  void *p = malloc(size);
  if (p == NULL) abort();
  return p;
}
__attribute__((noinline, noipa)) static void *site_b(size_t size) {
  void *p = malloc(size);
  if (p == NULL) abort();
  return p;
}

/* free through a pointer the compiler cannot see through, so that it keeps every call */
static void (*volatile release)(void *) = free;

typedef struct owner_thread {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  void *object;
  int done;
} owner_thread;

static void *owner_main(void *arg) {
  owner_thread *o = arg;
  pthread_mutex_lock(&o->lock);
  o->object = site_a(64);
  pthread_cond_broadcast(&o->cond);
  while (!o->done) pthread_cond_wait(&o->cond, &o->lock);
  pthread_mutex_unlock(&o->lock);
  return NULL;
}

static int remote_double(void) {
  owner_thread o = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0};
  pthread_t t;
  pthread_create(&t, NULL, owner_main, &o);
  pthread_mutex_lock(&o.lock);
  while (o.object == NULL) pthread_cond_wait(&o.cond, &o.lock);
  pthread_mutex_unlock(&o.lock);
  release(o.object);
  release(o.object);
  printf("not detected\n");
  pthread_mutex_lock(&o.lock);
  o.done = 1;
  pthread_cond_broadcast(&o.cond);
  pthread_mutex_unlock(&o.lock);
  pthread_join(t, NULL);
  return 0;
}

/* ---- valid frees of every kind: none may be taken for a double free ---- */

static void *exit_with_live(void *arg) {
  void **out = arg;
  for (int i = 0; i < 64; i++) out[i] = site_b(32 + (size_t)(i % 4) * 8);
  return NULL; /* the objects outlive the thread: its chunk is abandoned, then adopted */
}

static void *free_foreign(void *arg) {
  void **objs = arg;
  for (int i = 0; i < 64; i += 2) release(objs[i]);
  return NULL;
}

static int valid(void) {
  void *(*op_new)(size_t) = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "_Znwm");
  void (*op_delete_sized)(void *, size_t) = (void (*)(void *, size_t))dlsym(RTLD_DEFAULT, "_ZdlPvm");
  unsigned long check = 0;
  /* reuse: the same slots freed and allocated again, in several orders */
  for (int round = 0; round < 50; round++) {
    void *p[40];
    for (int i = 0; i < 40; i++) {
      p[i] = site_a(16 + (size_t)(i % 8) * 8);
      memset(p[i], i, 16);
    }
    for (int i = 0; i < 40; i += 2) release(p[i]);
    for (int i = 0; i < 40; i += 2) {
      p[i] = site_a(16 + (size_t)(i % 8) * 8);
      memset(p[i], i + 1, 16);
    }
    for (int i = 39; i >= 0; i--) {
      check += ((unsigned char *)p[i])[0];
      release(p[i]);
    }
  }
  /* realloc within and out of the slot, then free */
  char *r = site_a(24);
  strcpy(r, "abc");
  r = realloc(r, 40);
  r = realloc(r, 200);
  r = realloc(r, 16);
  check += (unsigned long)r[1];
  release(r);
  /* sized deletes, and plain frees of objects from operator new */
  if (op_new && op_delete_sized) {
    for (int round = 0; round < 20; round++) {
      void *q[30];
      for (int i = 0; i < 30; i++) q[i] = op_new(40);
      for (int i = 0; i < 30; i++) {
        if (i % 3) op_delete_sized(q[i], 40);
        else release(q[i]);
      }
    }
  }
  /* objects that outlive their thread, freed here (remote) or by another thread, and the
   * site's chunks adopted by the threads that come next */
  for (int round = 0; round < 4; round++) {
    void *objs[64];
    pthread_t t;
    pthread_create(&t, NULL, exit_with_live, objs);
    pthread_join(t, NULL);
    pthread_create(&t, NULL, free_foreign, objs);
    pthread_join(t, NULL);
    for (int i = 1; i < 64; i += 2) release(objs[i]);
  }
  printf("ok %lu\n", check);
  return 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "valid";
  if (strcmp(mode, "valid") == 0) return valid();
  if (strcmp(mode, "remote-double") == 0) return remote_double();
  char *p = site_a(64), *q = site_a(64);
  memset(p, 1, 64);
  memset(q, 2, 64);
  if (strcmp(mode, "double") == 0) {
    release(p);
    release(p);
  } else if (strcmp(mode, "double-later") == 0) {
    release(p);
    release(q);
    release(p);
  } else if (strcmp(mode, "interior") == 0) {
    release(p + 16);
  } else if (strcmp(mode, "realloc-freed") == 0) {
    release(p);
    p = realloc(p, 128);
  } else if (strcmp(mode, "sized-double") == 0) {
    void *(*op_new)(size_t) = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "_Znwm");
    void (*op_delete_sized)(void *, size_t) = (void (*)(void *, size_t))dlsym(RTLD_DEFAULT, "_ZdlPvm");
    if (op_new == NULL || op_delete_sized == NULL) {
      printf("no operator new here\n");
      return 2;
    }
    void *n = op_new(40);
    op_delete_sized(n, 40);
    op_delete_sized(n, 40);
  } else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  printf("not detected\n");
  return 0;
}
