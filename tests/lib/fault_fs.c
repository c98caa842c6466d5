/* A test-only LD_PRELOAD library that makes file operations on chosen paths
 * fail, to show that the tools report a full disk or an unwritable directory
 * clearly and leave no half-written output. Configured by environment:
 *   FAULT_FS_MATCH  the failing calls are those on a path containing this text
 *   FAULT_FS_OPS    which calls fail: any of open, write (and writev), rename, mkdir (comma-separated)
 *   FAULT_FS_ERRNO  the error they fail with (a number; default 28, ENOSPC)
 *   FAULT_FS_AFTER  let this many matching calls succeed first (default 0): a disk that fills mid-run
 * For write() the path is the descriptor's (/proc/self/fd/N). Unset
 * FAULT_FS_MATCH: every call passes through unchanged. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static long matched_calls;

static int should_fail(const char* op, const char* path) {
  const char* match = getenv("FAULT_FS_MATCH");
  const char* ops = getenv("FAULT_FS_OPS");
  if (!match || !*match || !path || !strstr(path, match)) return 0;
  if (!ops || !strstr(ops, op)) return 0;
  const char* after = getenv("FAULT_FS_AFTER");
  if (__atomic_fetch_add(&matched_calls, 1, __ATOMIC_SEQ_CST) < (after ? atol(after) : 0)) return 0;
  const char* code = getenv("FAULT_FS_ERRNO");
  errno = code ? atoi(code) : ENOSPC;
  return 1;
}

static int fd_fails(const char* op, int fd) {
  if (fd <= 2 || !getenv("FAULT_FS_MATCH")) return 0;
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) return 0;
  path[n] = '\0';
  return should_fail(op, path);
}

/* The next definition of NAME (libc's), looked up once. */
#define REAL(name)                                 \
  static __typeof__(&name) real_##name;            \
  if (!real_##name) real_##name = (__typeof__(&name))dlsym(RTLD_NEXT, #name)

ssize_t write(int fd, const void* data, size_t size) {
  REAL(write);
  if (fd_fails("write", fd)) return -1;
  return real_write(fd, data, size);
}

/* libstdc++ writes large blocks with writev. */
ssize_t writev(int fd, const struct iovec* iov, int count) {
  REAL(writev);
  if (fd_fails("write", fd)) return -1;
  return real_writev(fd, iov, count);
}

int rename(const char* from, const char* to) {
  REAL(rename);
  if (should_fail("rename", to)) return -1;
  return real_rename(from, to);
}

int mkdir(const char* path, mode_t mode) {
  REAL(mkdir);
  if (should_fail("mkdir", path)) return -1;
  return real_mkdir(path, mode);
}

static int open_with(const char* name, const char* path, int flags, va_list args) {
  mode_t mode = (flags & O_CREAT) ? va_arg(args, mode_t) : 0;
  if ((flags & (O_WRONLY | O_RDWR | O_CREAT)) && should_fail("open", path)) return -1;
  int (*real)(const char*, int, ...) = (int (*)(const char*, int, ...))dlsym(RTLD_NEXT, name);
  return real(path, flags, mode);
}

int open(const char* path, int flags, ...) {
  va_list args;
  va_start(args, flags);
  const int fd = open_with("open", path, flags, args);
  va_end(args);
  return fd;
}

int open64(const char* path, int flags, ...) {
  va_list args;
  va_start(args, flags);
  const int fd = open_with("open64", path, flags, args);
  va_end(args);
  return fd;
}

FILE* fopen(const char* path, const char* mode) {
  REAL(fopen);
  if (strpbrk(mode, "wa+") && should_fail("open", path)) return NULL;
  return real_fopen(path, mode);
}

FILE* fopen64(const char* path, const char* mode) {
  REAL(fopen64);
  if (strpbrk(mode, "wa+") && should_fail("open", path)) return NULL;
  return real_fopen64(path, mode);
}
