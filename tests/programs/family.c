/*
 * family - a parent and two forked children, each with a known heap, held
 * until the driver says so. No stdio.
 *
 * The parent keeps 5 blocks of 2,000 bytes and forks two children; child
 * i (1, 2) keeps i * 10 more blocks of 1,000 bytes (child_alloc), says so
 * on the ready pipe and waits for the hold pipe to close, then leaves by
 * _exit(0) (its blocks not freed). Once both are ready the parent writes
 * "ready\n", waits for a line on stdin, closes the hold pipe, waits for
 * the children and exits 0.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) static void child_alloc(int i)
{
    for (int k = 0; k < i * 10; k++) {
        void *volatile p = malloc(1000);
        memset((void *)p, i, 1000);
    }
}

int main(void)
{
    void *kept[5];
    for (int k = 0; k < 5; k++)
        kept[k] = malloc(2000);
    int ready[2], hold[2];
    if (pipe(ready) < 0 || pipe(hold) < 0)
        return 1;
    pid_t kids[2];
    for (int i = 1; i <= 2; i++) {
        kids[i - 1] = fork();
        if (kids[i - 1] == 0) {
            close(hold[1]);
            child_alloc(i);
            char c = 'r';
            if (write(ready[1], &c, 1) != 1)
                _exit(1);
            while (read(hold[0], &c, 1) > 0)
                ;
            _exit(0);
        }
    }
    close(hold[0]);
    char c;
    for (int i = 0; i < 2; i++)
        if (read(ready[0], &c, 1) != 1)
            return 1;
    if (write(1, "ready\n", 6) != 6)
        return 1;
    while (read(0, &c, 1) == 1 && c != '\n')
        ;
    close(hold[1]);
    int bad = 0;
    for (int i = 0; i < 2; i++) {
        int st;
        bad |= waitpid(kids[i], &st, 0) != kids[i] || !WIFEXITED(st) || WEXITSTATUS(st);
    }
    for (int k = 0; k < 5; k++)
        free(kept[k]);
    return bad;
}
