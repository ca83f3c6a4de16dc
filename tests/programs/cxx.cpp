/*
 * cxx - C++ allocation entry points. Every number below is the REQUESTED size;
 * none of the array element types has a non-trivial destructor, so no array
 * cookie is added. libstdc++ also allocates its 72,704-byte exception
 * emergency pool at startup (never freed), so global numbers are bounds; the
 * per-function numbers are exact.
 *
 *   new_delete_scalar   10 x { new int; delete }: "operator new" x10, 40 bytes,
 *                       10 temporary
 *   new_array           5 x new int[25]: "operator new[]" x5, 500 bytes (freed
 *                       later by free_arrays)
 *   nothrow_new         new(nothrow) double[8] = 64 "operator new[](nothrow)",
 *                       new(nothrow) long = 8 "operator new(nothrow)"; the array
 *                       is deleted, the long leaks: 2 allocations, 72 bytes,
 *                       8 leaked (1 block)
 *   aligned_new         struct alignas(64) Aligned { char c[128]; }
 *                       new Aligned          128 "operator new(align)"
 *                       new Aligned[3]       384 "operator new[](align)"
 *                       new(nothrow) Aligned 128 "operator new(align, nothrow)"
 *                       new(nothrow) Aligned[2] 256 "operator new[](align, nothrow)"
 *                       first three deleted, the last leaks: 4 allocations,
 *                       896 bytes, 256 leaked (1 block)
 *   vector_growth       std::vector<int>, 100 x push_back, no reserve: capacities
 *                       1,2,4,...,128 -> 8 x "operator new", 4 * 255 = 1,020 bytes,
 *                       all freed; the allocation sits in libstdc++'s allocator
 *                       (frames[0] is std::__new_allocator<int>::allocate), so the
 *                       harness matches on any frame. Site peak: 256 + 512 = 768
 *                       (the new 128-int buffer is allocated before the 64-int one
 *                       is freed). 1 temporary: the 128-int buffer (pushes 65..100
 *                       allocate nothing, then the vector dies).
 *   shapes::make_shapes(int) 3 x new Shape (24 bytes): "operator new" x3,
 *                       72 bytes, all leaked
 *   leak_cxx            new int[4] (16) + new char[100]: "operator new[]" x2,
 *                       116 bytes, all leaked
 *   bad_alloc_catch     new char[huge] fails: no allocation at this call; the
 *                       std::bad_alloc thrown is allocated by libstdc++'s
 *                       __cxa_allocate_exception (malloc of 128 + 8 = 136 bytes
 *                       with libstdc++ 12: exception header + the bad_alloc
 *                       object) and freed when the catch block ends: 1 x
 *                       malloc, 136 bytes, temporary, with frames[0] =
 *                       __cxa_allocate_exception and bad_alloc_catch further
 *                       out (the throw passes through the profiler's operator
 *                       new[], whose frames must not show)
 *
 * Program live bytes (without the pool): 500 after new_array; 572 in nothrow_new;
 * 1,404 at the end of aligned_new's allocations <- program peak (new_array 500 +
 * nothrow_new 8 + aligned_new 896); then 764, 264 (free_arrays), at most 1,032 in
 * vector_growth, 336, 452, at most 588 in bad_alloc_catch. Program total:
 * 35 allocations, 2,852 bytes, 452 leaked in 7 blocks, 12 temporary.
 */
#include <cstdint>
#include <cstdlib>
#include <new>
#include <unistd.h>
#include <vector>

struct alignas(64) Aligned {
    char c[128];
};

namespace shapes
{
struct Shape {
    double x, y, r;
};
} // namespace shapes

static int *arrays[5];
static long *kept_long;
static Aligned *kept_aligned;
static shapes::Shape *kept_shapes[3];
static int *kept_ints;
static char *kept_chars;

__attribute__((noinline)) void new_delete_scalar()
{
    for (int i = 0; i < 10; i++) {
        int *volatile p = new int(i);
        delete p;
    }
}

__attribute__((noinline)) void new_array()
{
    for (int i = 0; i < 5; i++)
        arrays[i] = new int[25];
}

__attribute__((noinline)) void nothrow_new()
{
    double *d = new (std::nothrow) double[8];
    long *l = new (std::nothrow) long(7);
    if (!d || !l)
        abort();
    delete[] d;
    kept_long = l;
}

__attribute__((noinline)) void aligned_new()
{
    Aligned *a1 = new Aligned;
    Aligned *a2 = new Aligned[3];
    Aligned *a3 = new (std::nothrow) Aligned;
    Aligned *a4 = new (std::nothrow) Aligned[2];
    if (!a3 || !a4)
        abort();
    if ((reinterpret_cast<unsigned long>(a1) | reinterpret_cast<unsigned long>(a2) |
         reinterpret_cast<unsigned long>(a3) | reinterpret_cast<unsigned long>(a4)) &
        63)
        abort();
    delete a1;
    delete[] a2;
    delete a3;
    kept_aligned = a4;
}

__attribute__((noinline)) void free_arrays()
{
    for (int i = 0; i < 5; i++)
        delete[] arrays[i];
}

__attribute__((noinline)) int vector_growth()
{
    std::vector<int> v;
    for (int i = 0; i < 100; i++)
        v.push_back(i);
    if (v.capacity() != 128)
        abort();
    int s = 0;
    for (int x : v)
        s += x;
    return s;
}

namespace shapes
{
__attribute__((noinline)) void make_shapes(int n)
{
    for (int i = 0; i < n; i++)
        kept_shapes[i] = new Shape{1.0 * i, 2.0, 3.0};
}
} // namespace shapes

__attribute__((noinline)) void leak_cxx()
{
    kept_ints = new int[4];
    kept_chars = new char[100];
}

static volatile size_t huge = SIZE_MAX / 2;

__attribute__((noinline)) int bad_alloc_catch()
{
    try {
        char *p = new char[huge];
        return p == nullptr ? 1 : 2;
    } catch (const std::bad_alloc &) {
        return 7;
    }
}

int main()
{
    new_delete_scalar();
    new_array();
    nothrow_new();
    aligned_new();
    free_arrays();
    if (vector_growth() != 4950)
        return 1;
    shapes::make_shapes(3);
    leak_cxx();
    if (bad_alloc_catch() != 7)
        return 1;
    static const char msg[] = "cxx: done\n";
    if (write(1, msg, sizeof msg - 1) < 0)
        return 1;
    return 0;
}
