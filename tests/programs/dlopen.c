/*
 * dlopen - loads libmvzplugin.so (argv[1], or next to /proc/self/exe),
 * whose constructor allocates (plugin_init: malloc(1000), leaked), calls
 * plugin_run() (plugin_leak: 4 x malloc(512) leaked; plugin_temp:
 * malloc(300) freed), unloads it with dlclose, then allocates once more
 * from the main program:
 *   after_unload  malloc(77), leaked
 * It prints "plugin unloaded\n" when the library is no longer in
 * /proc/self/maps after dlclose, "plugin still mapped\n" otherwise.
 * dlopen/dlclose allocate internally (link maps, scope arrays), so global
 * numbers are bounds; the leaked sites of plugin_leak must still be
 * symbolized (function, file, module) although the library is gone.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void say(const char *s)
{
    if (write(1, s, strlen(s)) < 0)
        _exit(99);
}

static void *kept;

__attribute__((noinline)) void after_unload(void)
{
    kept = malloc(77);
    if (!kept)
        abort();
}

/* Does /proc/self/maps mention name? Reads with read(2) into a static buffer. */
static int mapped(const char *name)
{
    static char buf[1 << 20];
    int fd = open("/proc/self/maps", O_RDONLY);
    if (fd < 0)
        return -1;
    size_t got = 0;
    ssize_t r;
    while (got < sizeof buf - 1 && (r = read(fd, buf + got, sizeof buf - 1 - got)) > 0)
        got += (size_t)r;
    close(fd);
    buf[got] = 0;
    return strstr(buf, name) != NULL;
}

int main(int argc, char **argv)
{
    char path[PATH_MAX];
    if (argc > 1) {
        strncpy(path, argv[1], sizeof path - 1);
        path[sizeof path - 1] = 0;
    } else {
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
        if (n <= 0)
            return 1;
        path[n] = 0;
        char *slash = strrchr(path, '/');
        strcpy(slash ? slash + 1 : path, "libmvzplugin.so");
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        say("dlopen failed\n");
        return 2;
    }
    int (*run)(void) = (int (*)(void))dlsym(h, "plugin_run");
    if (!run) {
        say("dlsym failed\n");
        return 3;
    }
    if (run() != 3)
        return 4;
    if (dlclose(h) != 0)
        return 5;
    say(mapped("libmvzplugin.so") ? "plugin still mapped\n" : "plugin unloaded\n");
    after_unload();
    return 0;
}
