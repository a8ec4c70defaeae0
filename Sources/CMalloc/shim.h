#pragma once
/* glibc's allocator settings (mallopt, M_ARENA_MAX, M_MMAP_THRESHOLD): malloc.h is not in Swift's Glibc module. */
#include <malloc.h>
