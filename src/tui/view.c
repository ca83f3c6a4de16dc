/*
 * view.c - `memviz live`'s terminal view (view.h), in ncurses: the heap
 * and RSS at the moment shown, the heap over the window up to it, the top
 * sites. The moment shown follows the program (live), stays where the
 * user paused it (the program runs on), or, once resumed, moves on from
 * there at the program's pace, as far behind as the pause lasted, until
 * the user jumps back to live; the arrows move it sample by sample.
 * Digits pick a page (with tui_pages: the live view is 1), ? the help.
 */
#include "tui/view.h"

#include <curses.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "util/fmt.h"

enum mode { LIVE, PAUSED, REPLAY };

struct view {
    struct live_client *c;
    struct live_proc procs[LIVE_PROCS];
    int nprocs;
    uint64_t procs_ns; /* when the list was last fetched */
    enum mode mode;
    uint64_t seq;      /* the sample shown (PAUSED, REPLAY) */
    uint64_t last_ns;  /* REPLAY: wall time of the last step */
    char message[256]; /* the answer to the last command */
    const struct tui_pages *pages;
    int page; /* 0: the live view, k: pages page k */
    int help; /* the help is shown */
};

static const char live_help[] =
    "space    pause, and again: resume from there at the program's pace\n"
    "left, h  a sample back (and pause)\n"
    "right, l a sample on (and pause)\n"
    "end, g   back to live (or the end of the run)\n"
    "tab, n   the next process of the run\n"
    "s        take a heap snapshot (needs the token)\n";

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Under mu: the sample to show, clamped to what the client keeps. */
static uint64_t shown(struct view *v)
{
    const struct live_client *c = v->c;
    if (c->next == c->first)
        return 0;
    if (v->mode == LIVE || v->seq >= c->next)
        return c->next - 1;
    return v->seq < c->first ? c->first : v->seq;
}

static void draw_chart(struct view *v, int top, int height, uint64_t at)
{
    const struct live_client *c = v->c;
    int width = COLS - 12;
    if (width < 10 || height < 2)
        return;
    uint64_t from = at + 1 > (uint64_t)width ? at + 1 - (uint64_t)width : 0, most = 1;
    from = from < c->first ? c->first : from;
    for (uint64_t k = from; k <= at; k++)
        most = c->ring[k % c->cap].heap_bytes > most ? c->ring[k % c->cap].heap_bytes : most;
    char a[32];
    mvprintw(top, 0, "%10s", mvz_fmt_bytes(most, a, sizeof(a)));
    mvprintw(top + height - 1, 0, "%10s", "0");
    for (uint64_t k = from; k <= at; k++) {
        uint64_t h = c->ring[k % c->cap].heap_bytes;
        int bar = (int)((h * (uint64_t)height + most - 1) / most);
        for (int r = 0; r < bar && r < height; r++)
            mvaddch(top + height - 1 - r, 11 + (int)(k - from), '#');
    }
    char each[32];
    mvprintw(top + height, 11, "heap over the last %" PRIu64 " samples (%s each)", at - from + 1,
             mvz_fmt_duration(c->period_ns, each, sizeof(each)));
}

/* Under mu: site `where`'s live bytes about 10 s before sample at (the
 * nearest sample with sites then, or the first after it that has them),
 * for its growth rate; -1 when unknown. */
static int64_t bytes_before(struct view *v, uint64_t at, const char *where, uint64_t *dt)
{
    const struct live_client *c = v->c;
    uint64_t back = c->period_ns ? 10000000000ull / c->period_ns : 100;
    if (at < c->first + 1)
        return -1;
    uint64_t from = at > c->first + back ? at - back : c->first;
    while (from < at && !c->sites[from % c->cap])
        from++;
    const struct live_sites *s = from < at ? c->sites[from % c->cap] : NULL;
    if (!s)
        return -1;
    *dt = c->ring[at % c->cap].t_ns - c->ring[from % c->cap].t_ns;
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->v[i].where, where))
            return (int64_t)s->v[i].live_bytes;
    return 0; /* not among the top then */
}

static void draw_sites(struct view *v, int top, int bottom, uint64_t at)
{
    const struct live_sites *s = live_client_sites_at(v->c, at);
    char a[32], b[32], g[48];
    mvprintw(top, 0, "Top sites by live bytes (growth over the last 10 s):");
    for (size_t i = 0; s && i < s->n && top + 1 + (int)i < bottom; i++) {
        uint64_t dt = 0;
        int64_t then = bytes_before(v, at, s->v[i].where, &dt);
        g[0] = 0;
        if (then >= 0 && dt > 0) {
            int64_t d = (int64_t)s->v[i].live_bytes - then;
            snprintf(g, sizeof(g), "%s%s/s", d < 0 ? "-" : "+",
                     mvz_fmt_bytes((uint64_t)((d < 0 ? -d : d) * 1e9 / (double)dt), a, sizeof(a)));
        }
        mvprintw(top + 1 + (int)i, 0, "  %12s %10s %14s  %.*s",
                 mvz_fmt_bytes(s->v[i].live_bytes, a, sizeof(a)),
                 mvz_fmt_count(s->v[i].live_blocks, b, sizeof(b)), g, COLS > 44 ? COLS - 44 : 1,
                 s->v[i].where);
    }
    if (!s)
        mvprintw(top + 1, 2, "(none yet)");
}

/* The program's instruments and last log lines (include/memviz.h). */
static int draw_user(struct view *v, int bottom, uint64_t at)
{
    const struct live_sites *s = live_client_sites_at(v->c, at);
    if (!s || (!s->nins && !s->nlog && !s->nthreads && !s->nsnaps))
        return bottom;
    int rows = (int)(s->nins + s->nlog) + (s->nins ? 1 : 0) + (s->nlog ? 1 : 0) +
               (s->nthreads ? 1 + (int)s->nthreads : 0) + (s->nsnaps ? 1 : 0);
    int top = bottom - rows, r = top;
    if (top < 20)
        return bottom;
    if (s->nthreads)
        mvprintw(r++, 0, "Threads (by live bytes):");
    for (size_t i = 0; i < s->nthreads; i++)
        mvprintw(r++, 2, "%.*s", COLS - 2, s->threads[i]);
    if (s->nsnaps) {
        mvprintw(r, 0, "Snapshots:");
        for (size_t i = 0; i < s->nsnaps; i++)
            printw(" %s", s->snaps[i]);
        r++;
    }
    if (s->nins)
        mvprintw(r++, 0, "Instruments:");
    for (size_t i = 0; i < s->nins; i++)
        mvprintw(r++, 2, "%.*s", COLS - 2, s->ins[i]);
    if (s->nlog)
        mvprintw(r++, 0, "Log:");
    for (size_t i = 0; i < s->nlog; i++)
        mvprintw(r++, 2, "%.*s", COLS - 2, s->log[i]);
    return top;
}

static void draw_status(struct view *v, uint64_t at)
{
    const struct live_client *c = v->c;
    const struct live_sample *now = &c->ring[at % c->cap];
    const char *mode = v->mode == LIVE ? "LIVE" : v->mode == PAUSED ? "PAUSED" : "REPLAY";
    if (c->ended && v->mode == LIVE)
        mode = "ENDED";
    mvprintw(0, 0, "memviz live  pid %d  %.*s", c->pid, COLS > 30 ? COLS - 30 : 1, c->command);
    uint64_t latest = c->next ? c->ring[(c->next - 1) % c->cap].t_ns : 0;
    mvprintw(1, 0, "[%s] at %.3f s", mode, (double)now->t_ns / 1e9);
    if (v->mode != LIVE)
        printw(", %.3f s behind the program", (double)(latest - now->t_ns) / 1e9);
    if (!c->connected && !c->ended)
        printw("  (not connected: %s)", c->error);
    char a[32], b[32], d[32], e[32], f[32];
    mvprintw(3, 0, "heap %s in %s blocks   RSS %s   allocations %s  frees %s",
             mvz_fmt_bytes(now->heap_bytes, a, sizeof(a)),
             mvz_fmt_count(now->heap_blocks, b, sizeof(b)), mvz_fmt_bytes(now->rss, d, sizeof(d)),
             mvz_fmt_count(now->allocations, e, sizeof(e)),
             mvz_fmt_count(now->frees, f, sizeof(f)));
    mvprintw(4, 0, "peak so far %s at %.3f s", mvz_fmt_bytes(c->peak_bytes, a, sizeof(a)),
             (double)c->peak_time_ns / 1e9);
    if (c->sample_bytes)
        printw("   (estimates: one allocation in every %s sampled)",
               mvz_fmt_bytes(c->sample_bytes, b, sizeof(b)));
}

/* Line 2: the processes of the run, the one shown in brackets. */
static void draw_procs(struct view *v)
{
    if (v->nprocs < 2)
        return;
    move(2, 0);
    printw("processes (tab: next):");
    int shown = v->c->want_pid ? v->c->want_pid : v->procs[0].pid;
    for (int i = 0; i < v->nprocs; i++)
        printw(v->procs[i].pid == shown ? " [%d %s%s]" : " %d %s%s", v->procs[i].pid,
               v->procs[i].name, v->procs[i].ended ? " (ended)" : "");
}

/* Line 0 with pages: each page's digit and name, the one shown marked. */
static void draw_page_bar(struct view *v)
{
    move(0, 0);
    printw(v->page ? " 1 live " : "[1 live]");
    for (int i = 0; i < v->pages->n; i++)
        printw(v->page == i + 1 ? " [%d %s]" : "  %d %s ", i + 2, v->pages->names[i]);
}

static void draw_help(struct view *v)
{
    erase();
    mvprintw(0, 0, "memviz: keys (any key: back)");
    int r = 2;
    mvprintw(r++, 0, "q        quit");
    mvprintw(r++, 0, "?        this help");
    if (v->pages)
        mvprintw(r++, 0, "1-%d      the pages: 1 live%s", v->pages->n + 1, "");
    const char *text =
        v->page && v->pages->help ? v->pages->help(v->pages->ctx, v->page - 1) : live_help;
    mvprintw(++r, 0, "on this page:");
    r++;
    for (const char *line = text; *line && r < LINES - 1; r++) {
        size_t n = strcspn(line, "\n");
        mvprintw(r, 2, "%.*s", (int)n, line);
        line += n + (line[n] == '\n');
    }
    refresh();
}

static void draw(struct view *v)
{
    if (v->help) {
        draw_help(v);
        return;
    }
    erase();
    if (v->page) {
        draw_page_bar(v);
        v->pages->draw(v->pages->ctx, v->page - 1, 1, LINES - 2);
        mvprintw(LINES - 2, 0, "%.*s", COLS, v->message);
        mvprintw(LINES - 1, 0, "%.*s", COLS, "1-9 pages  ? help  q quit");
        refresh();
        return;
    }
    draw_procs(v);
    pthread_mutex_lock(&v->c->mu);
    if (v->c->next == v->c->first) {
        mvprintw(0, 0, "memviz live: waiting for %s:%d %s", v->c->host, v->c->port, v->c->error);
    } else {
        uint64_t at = shown(v);
        draw_status(v, at);
        draw_chart(v, 6, LINES > 30 ? 10 : 5, at);
        int bottom = draw_user(v, LINES - 2, at);
        draw_sites(v, LINES > 30 ? 18 : 13, bottom, at);
    }
    pthread_mutex_unlock(&v->c->mu);
    mvprintw(LINES - 2, 0, "%.*s", COLS, v->message);
    mvprintw(LINES - 1, 0, "%.*s", COLS,
             v->pages ? "space pause/resume  left/right move  end live  1-9 pages  ? help  q quit"
                      : "space pause/resume  left/right move  end live  tab next process  "
                        "s snapshot  ? help  q quit");
    refresh();
}

/* REPLAY: one sample a period, from where it was paused. */
static void advance(struct view *v)
{
    pthread_mutex_lock(&v->c->mu);
    uint64_t period = v->c->period_ns ? v->c->period_ns : 100000000ull, now = mono_ns();
    while (v->mode == REPLAY && now - v->last_ns >= period) {
        v->last_ns += period;
        if (++v->seq + 1 >= v->c->next)
            v->mode = LIVE;
    }
    pthread_mutex_unlock(&v->c->mu);
}

static void pause_here(struct view *v)
{
    pthread_mutex_lock(&v->c->mu);
    v->seq = shown(v);
    pthread_mutex_unlock(&v->c->mu);
    v->mode = PAUSED;
}

/* Keys every page has: quit, help, the pages. 1 when taken. */
static int common_key(struct view *v, int ch, int *quit)
{
    if (v->help) {
        v->help = 0;
        return 1;
    }
    if (ch == 'q' || ch == 'Q')
        return *quit = 1;
    if (ch == '?') {
        v->help = 1;
        return 1;
    }
    if (v->pages && ch >= '1' && ch <= '1' + v->pages->n) {
        v->page = ch - '1';
        return 1;
    }
    return 0;
}

static int key(struct view *v, int ch)
{
    int quit = 0;
    if (common_key(v, ch, &quit))
        return quit;
    if (v->page) {
        v->pages->key(v->pages->ctx, v->page - 1, ch);
        return 0;
    }
    switch (ch) {
    case ' ':
        if (v->mode == PAUSED) {
            v->mode = REPLAY;
            v->last_ns = mono_ns();
        } else {
            pause_here(v);
        }
        break;
    case KEY_LEFT:
    case 'h':
        pause_here(v);
        if (v->seq)
            v->seq--;
        break;
    case KEY_RIGHT:
    case 'l':
        pause_here(v);
        v->seq++;
        break;
    case KEY_END:
    case 'g':
        v->mode = LIVE;
        break;
    case 's':
        live_client_snapshot(v->c, v->message, sizeof(v->message));
        break;
    case '\t':
    case 'n':
        if (v->nprocs > 1) {
            int shown = v->c->want_pid ? v->c->want_pid : v->procs[0].pid, at = 0;
            for (int i = 0; i < v->nprocs; i++)
                if (v->procs[i].pid == shown)
                    at = i;
            live_client_follow(v->c, v->procs[(at + 1) % v->nprocs].pid);
            v->mode = LIVE;
        }
        break;
    default:
        break;
    }
    return 0;
}

int live_view_run(struct live_client *c, const struct tui_pages *pages)
{
    struct view v = {.c = c, .mode = LIVE, .pages = pages};
    if (!initscr())
        return -1;
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    curs_set(0);
    timeout(100);
    for (;;) {
        if (mono_ns() - v.procs_ns > 1000000000ull) { /* the process list, once a second */
            int n = live_client_processes(c, v.procs);
            v.nprocs = n > 0 ? n : v.nprocs;
            v.procs_ns = mono_ns();
        }
        advance(&v);
        draw(&v);
        int ch = getch();
        if (ch != ERR && key(&v, ch))
            break;
    }
    endwin();
    return 0;
}
