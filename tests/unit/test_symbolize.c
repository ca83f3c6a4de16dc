/*
 * test_symbolize.c - unit tests for src/analysis/symbolize.c: the test
 * symbolizes return addresses inside its own executable (known calls, an
 * inlined call), a libc function, the vdso, unknown addresses, missing files
 * and build-id mismatches.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "analysis/symbolize.h"

#define MAX_FRAMES 16

static char self_path[4096];
static unsigned known_call_line;
static unsigned inner_call_line;
static unsigned outer_call_line;

/* noipa keeps these out-of-line and unchanged, so the frames stay real. */
__attribute__((noipa)) static uint64_t capture_return(void)
{
    return (uint64_t)(uintptr_t)__builtin_return_address(0);
}

__attribute__((noipa)) static uint64_t known_caller(void)
{
    known_call_line = __LINE__ + 1;
    uint64_t ret = capture_return();
    __asm__ volatile("" : "+r"(ret)); /* no tail call */
    return ret;
}

static inline __attribute__((always_inline)) uint64_t inlined_helper(void)
{
    inner_call_line = __LINE__ + 1;
    uint64_t ret = capture_return();
    __asm__ volatile("" : "+r"(ret));
    return ret;
}

__attribute__((noipa)) static uint64_t inline_caller(void)
{
    outer_call_line = __LINE__ + 1;
    uint64_t ret = inlined_helper();
    __asm__ volatile("" : "+r"(ret));
    return ret;
}

struct load_range {
    uint64_t lo, hi;
};

static struct load_range load_range_of(const struct dl_phdr_info *info)
{
    struct load_range r = {UINT64_MAX, 0};
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uint64_t start = info->dlpi_addr + ph->p_vaddr;
        if (start < r.lo)
            r.lo = start;
        if (start + ph->p_memsz > r.hi)
            r.hi = start + ph->p_memsz;
    }
    return r;
}

/* The main program is the object dl_iterate_phdr reports with an empty name. */
static const char *object_path(const struct dl_phdr_info *info)
{
    return info->dlpi_name[0] != '\0' ? info->dlpi_name : self_path;
}

static int add_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct load_range r = load_range_of(info);
    mvz_symbolizer_add_module(data, object_path(info), info->dlpi_addr, r.lo, r.hi, NULL, 0);
    return 0;
}

struct self_info {
    uint64_t bias, lo, hi;
    uint8_t build_id[64];
    size_t build_id_len;
};

static void read_build_id(const struct dl_phdr_info *info, const ElfW(Phdr) * ph,
                          struct self_info *self)
{
    const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
    const char *end = p + ph->p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
        const ElfW(Nhdr) *note = (const ElfW(Nhdr) *)p;
        const char *name = p + sizeof *note;
        const char *desc = name + ((note->n_namesz + 3) & ~3u);
        if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
            note->n_descsz <= sizeof self->build_id) {
            memcpy(self->build_id, desc, note->n_descsz);
            self->build_id_len = note->n_descsz;
            return;
        }
        p = desc + ((note->n_descsz + 3) & ~3u);
    }
}

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    if (info->dlpi_name[0] != '\0')
        return 0;
    struct self_info *self = data;
    struct load_range r = load_range_of(info);
    self->bias = info->dlpi_addr;
    self->lo = r.lo;
    self->hi = r.hi;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type == PT_NOTE && self->build_id_len == 0)
            read_build_id(info, &info->dlpi_phdr[i], self);
    }
    return 1;
}

static int setup_all(void **state)
{
    ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
    if (n <= 0)
        return -1;
    self_path[n] = '\0';
    struct mvz_symbolizer *s = mvz_symbolizer_new();
    if (s == NULL)
        return -1;
    dl_iterate_phdr(add_object, s);
    *state = s;
    return 0;
}

static int teardown_all(void **state)
{
    mvz_symbolizer_free(*state);
    return 0;
}

static void assert_file_is_this_test(const char *file)
{
    assert_non_null(file);
    assert_non_null(strstr(file, "test_symbolize.c"));
}

static void test_known_call(void **state)
{
    struct mvz_frame f[MAX_FRAMES];
    uint64_t ret = known_caller();
    int n = mvz_symbolize(*state, ret, f, MAX_FRAMES);
    assert_int_equal(n, 1);
    assert_string_equal(f[0].function, "known_caller");
    assert_file_is_this_test(f[0].file);
    assert_int_equal(f[0].line, known_call_line);
    assert_string_equal(f[0].module, self_path);
    assert_int_equal(f[0].inlined, 0);
    assert_true(f[0].address == ret);
}

static void test_inlined_call(void **state)
{
    struct mvz_frame f[MAX_FRAMES];
    uint64_t ret = inline_caller();
    int n = mvz_symbolize(*state, ret, f, MAX_FRAMES);
    assert_int_equal(n, 2);
    assert_string_equal(f[0].function, "inlined_helper");
    assert_int_equal(f[0].inlined, 1);
    assert_file_is_this_test(f[0].file);
    assert_int_equal(f[0].line, inner_call_line);
    assert_string_equal(f[1].function, "inline_caller");
    assert_int_equal(f[1].inlined, 0);
    assert_file_is_this_test(f[1].file);
    assert_int_equal(f[1].line, outer_call_line);
    assert_string_equal(f[1].module, self_path);
}

static void test_max_caps_frames(void **state)
{
    struct mvz_frame f[1];
    int n = mvz_symbolize(*state, inline_caller(), f, 1);
    assert_int_equal(n, 1);
    assert_string_equal(f[0].function, "inlined_helper");
    assert_int_equal(f[0].inlined, 1);
}

static void test_cached_results_are_stable(void **state)
{
    struct mvz_frame a[MAX_FRAMES], b[MAX_FRAMES];
    uint64_t ret = known_caller();
    assert_int_equal(mvz_symbolize(*state, ret, a, MAX_FRAMES), 1);
    assert_int_equal(mvz_symbolize(*state, ret, b, MAX_FRAMES), 1);
    assert_ptr_equal(a[0].function, b[0].function);
    assert_ptr_equal(a[0].file, b[0].file);
    assert_int_equal(a[0].line, b[0].line);
}

/* Works from DWARF with libc6-dbg installed and from .dynsym without it. */
static void test_libc_symbol(void **state)
{
    void *fn = dlsym(RTLD_DEFAULT, "abs");
    assert_non_null(fn);
    struct mvz_frame f[MAX_FRAMES];
    int n = mvz_symbolize(*state, (uint64_t)(uintptr_t)fn + 1, f, MAX_FRAMES);
    assert_true(n >= 1);
    assert_string_equal(f[n - 1].function, "abs");
    assert_non_null(f[n - 1].module);
    assert_non_null(strstr(f[n - 1].module, "libc.so"));
}

static void test_unknown_address(void **state)
{
    struct mvz_frame f[MAX_FRAMES];
    const uint64_t addrs[] = {0, 1, 0x10, UINT64_MAX};
    for (size_t i = 0; i < sizeof addrs / sizeof addrs[0]; i++) {
        int n = mvz_symbolize(*state, addrs[i], f, MAX_FRAMES);
        assert_int_equal(n, 1);
        assert_string_equal(f[0].function, "??");
        assert_null(f[0].module);
        assert_null(f[0].file);
        assert_int_equal(f[0].line, 0);
        assert_true(f[0].address == addrs[i]);
    }
}

static void test_vdso_has_module_only(void **state)
{
    uint64_t vdso = getauxval(AT_SYSINFO_EHDR);
    if (vdso == 0)
        skip();
    struct mvz_frame f[MAX_FRAMES];
    int n = mvz_symbolize(*state, vdso + 1, f, MAX_FRAMES);
    assert_int_equal(n, 1);
    assert_string_equal(f[0].function, "linux-vdso.so.1+0x1");
    assert_non_null(f[0].module);
    assert_null(f[0].file);
}

static void test_missing_file(void **state)
{
    (void)state;
    struct mvz_symbolizer *s = mvz_symbolizer_new();
    assert_non_null(s);
    const char *path = "/nonexistent/memviz/libgone.so";
    assert_int_equal(mvz_symbolizer_add_module(s, path, 0x100000, 0x100000, 0x200000, NULL, 0), -1);
    struct mvz_frame f[MAX_FRAMES];
    assert_int_equal(mvz_symbolize(s, 0x150000, f, MAX_FRAMES), 1);
    assert_string_equal(f[0].function, "libgone.so+0x50000 (file not readable)");
    assert_string_equal(f[0].module, path);
    assert_null(f[0].file);
    assert_int_equal(mvz_symbolize(s, 0x200001, f, MAX_FRAMES), 1);
    assert_null(f[0].module);
    mvz_symbolizer_free(s);
}

static struct mvz_symbolizer *self_symbolizer(const struct self_info *self, const uint8_t *id,
                                              size_t len)
{
    struct mvz_symbolizer *s = mvz_symbolizer_new();
    assert_non_null(s);
    assert_int_equal(
        mvz_symbolizer_add_module(s, self_path, self->bias, self->lo, self->hi, id, len), 0);
    return s;
}

static void test_matching_build_id(void **state)
{
    (void)state;
    struct self_info self = {0};
    dl_iterate_phdr(find_self, &self);
    if (self.build_id_len == 0)
        skip();
    struct mvz_symbolizer *s = self_symbolizer(&self, self.build_id, self.build_id_len);
    struct mvz_frame f[MAX_FRAMES];
    assert_int_equal(mvz_symbolize(s, known_caller(), f, MAX_FRAMES), 1);
    assert_string_equal(f[0].function, "known_caller");
    assert_int_equal(f[0].line, known_call_line);
    mvz_symbolizer_free(s);
}

static void test_wrong_build_id(void **state)
{
    (void)state;
    struct self_info self = {0};
    dl_iterate_phdr(find_self, &self);
    uint8_t wrong[20];
    memset(wrong, 0xab, sizeof wrong);
    if (self.build_id_len == sizeof wrong)
        wrong[0] = (uint8_t)~self.build_id[0];
    struct mvz_symbolizer *s = self_symbolizer(&self, wrong, sizeof wrong);
    struct mvz_frame f[MAX_FRAMES];
    uint64_t ret = known_caller();
    assert_int_equal(mvz_symbolize(s, ret, f, MAX_FRAMES), 1);
    char want[128];
    snprintf(want, sizeof(want),
             "test_symbolize+0x%" PRIx64 " (build-id differs from the file on disk)",
             ret - (uint64_t)self.bias);
    assert_string_equal(f[0].function, want);
    assert_string_equal(f[0].module, self_path);
    assert_null(f[0].file);
    assert_int_equal(f[0].line, 0);
    mvz_symbolizer_free(s);
}

static void test_demangle(void **state)
{
    struct mvz_symbolizer *s = *state;
    assert_string_equal(mvz_symbolizer_demangle(s, "_ZN3foo3barEi"), "foo::bar(int)");
    const char *plain = "malloc";
    assert_ptr_equal(mvz_symbolizer_demangle(s, plain), plain);
    const char *bad = "_Z!!not-mangled";
    assert_ptr_equal(mvz_symbolizer_demangle(s, bad), bad);
    assert_null(mvz_symbolizer_demangle(s, NULL));
}

static void test_bad_input(void **state)
{
    struct mvz_frame f[MAX_FRAMES];
    assert_int_equal(mvz_symbolize(*state, 0x1234, NULL, MAX_FRAMES), 0);
    assert_int_equal(mvz_symbolize(*state, 0x1234, f, 0), 0);
    assert_int_equal(mvz_symbolize(*state, 0x1234, f, -5), 0);
    assert_int_equal(mvz_symbolize(NULL, 0x1234, f, MAX_FRAMES), 1);
    assert_string_equal(f[0].function, "??");
    assert_int_equal(mvz_symbolizer_add_module(NULL, "/bin/sh", 0, 0, 1, NULL, 0), -1);
    assert_int_equal(mvz_symbolizer_add_module(*state, NULL, 0, 0, 1, NULL, 0), -1);
    mvz_symbolizer_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_call),
        cmocka_unit_test(test_inlined_call),
        cmocka_unit_test(test_max_caps_frames),
        cmocka_unit_test(test_cached_results_are_stable),
        cmocka_unit_test(test_libc_symbol),
        cmocka_unit_test(test_unknown_address),
        cmocka_unit_test(test_vdso_has_module_only),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_matching_build_id),
        cmocka_unit_test(test_wrong_build_id),
        cmocka_unit_test(test_demangle),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, setup_all, teardown_all);
}
