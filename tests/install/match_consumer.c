/* An application of the installed matching engine, in C: one receive posted with a wildcard
 * source, two messages arriving, the second of which must wait in the unexpected queue. */
#include <loom/match.h>
#include <stdio.h>

int main(void) {
  loom_match_engine* engine = loom_match_create(NULL);
  if (!engine) return 1;
  int receive = 0, first = 1, second = 2;
  loom_match_envelope matched;
  int ok = loom_match_post(engine, LOOM_MATCH_ANY_SOURCE, 7, 0, &receive, &matched) ==
               LOOM_MATCH_QUEUED &&
           loom_match_arrive(engine, 3, 7, 0, &first, &matched) == LOOM_MATCH_MATCHED &&
           matched.user == &receive &&
           loom_match_arrive(engine, 4, 7, 0, &second, &matched) == LOOM_MATCH_QUEUED &&
           loom_match_post(engine, 4, 7, 0, &receive, &matched) == LOOM_MATCH_MATCHED &&
           matched.user == &second && matched.source == 4;
  printf("match_consumer: backend %s: %s\n",
         loom_match_backend_name(loom_match_engine_backend(engine)), ok ? "OK" : "FAILED");
  loom_match_destroy(engine);
  return ok ? 0 : 1;
}
