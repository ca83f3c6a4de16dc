/*
 * instrumented - a program that uses the instrumentation API
 * (include/memviz.h), linked with the stub library, so it also runs
 * without memviz. No stdio.
 *
 * Phase "load": 100 blocks of 1,000 bytes kept; log "loaded 100 entries".
 * Phase "serve": 1,000 requests (counter "requests"), each allocating and
 * freeing 64 bytes, and 50 blocks of 2,000 bytes kept; value
 * "queue_length" set to 17, double value "hit_ratio" to 0.25; log "served
 * 1000 requests". Phase "time": stopwatch "work", 5 sections of 2 ms in
 * main, 3 in a second thread; tag "node": 100 blocks of 48 bytes marked,
 * each pointing to one shared block of 1,000 bytes and a 16-byte key of
 * its own; 40 freed with their keys (60 live at the end: their deep size
 * 60 * 48 + 60 * 16 + 1,000 = 4,840 bytes in 121 blocks). String value "mode": "tagging"
 * then "done, with \"quotes\"\n". Then frees everything and exits 0. It
 * sleeps 2 ms around each phase change: the trace times events in units of 65.5 us, and a phase's
 * boundary is exact only between events that far apart.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../include/memviz.h"

static void *kept[150];

static void pause_2ms(void)
{
    struct timespec ts = {0, 2 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

static memviz_stopwatch *work;

static void sections(int n)
{
    for (int i = 0; i < n; i++) {
        memviz_stopwatch_start(work);
        pause_2ms();
        memviz_stopwatch_stop(work);
    }
}

static void *other(void *arg)
{
    (void)arg;
    sections(3);
    return NULL;
}

int main(void)
{
    memviz_counter *requests = memviz_counter_new("requests");
    memviz_value *queue = memviz_value_new("queue_length");
    memviz_value *ratio = memviz_value_new_double("hit_ratio");
    pause_2ms();
    memviz_phase("load");
    pause_2ms();
    for (int i = 0; i < 100; i++)
        kept[i] = malloc(1000);
    memviz_log("loaded %d entries", 100);
    pause_2ms();
    memviz_phase("serve");
    pause_2ms();
    for (int i = 0; i < 1000; i++) {
        void *volatile p = malloc(64);
        free(p);
        memviz_counter_add(requests, 1);
    }
    for (int i = 100; i < 150; i++)
        kept[i] = malloc(2000);
    memviz_value_set(queue, 17);
    memviz_value_set_double(ratio, 0.25);
    memviz_log("served %d requests", 1000);
    pause_2ms();
    memviz_phase("time");
    pause_2ms();
    work = memviz_stopwatch_new("work");
    pthread_t t;
    pthread_create(&t, NULL, other, NULL);
    pthread_join(t, NULL);
    sections(5);
    /* tag "node": 100 blocks of 48 bytes marked (one twice, and a stack
     * address that is no block), 40 freed: 60 live (2,880 bytes) at the
     * end, at most 4,800 bytes */
    memviz_tag *node = memviz_tag_new("node");
    memviz_value *mode = memviz_value_new_string("mode");
    memviz_value_set_string(mode, "tagging");
    void **nodes[100];
    void *shared = malloc(1000);
    for (int i = 0; i < 100; i++) {
        nodes[i] = malloc(48);
        memset(nodes[i], 0, 48);
        nodes[i][0] = shared;     /* every node: the shared block */
        nodes[i][1] = malloc(16); /* and a key of its own */
        memviz_tag_mark(node, nodes[i]);
    }
    memviz_tag_mark(node, nodes[0]);
    memviz_tag_mark(node, &node);
    for (int i = 0; i < 40; i++) {
        free(nodes[i][1]);
        free(nodes[i]);
    }
    for (int i = 0; i < 150; i++)
        free(kept[i]);
    memviz_value_set_string(mode, "done, with \"quotes\"\n");
    return 0;
}
