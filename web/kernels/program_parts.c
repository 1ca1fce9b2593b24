/* A program run as independent parts, one sub-batch each, by the kernel pool's threads (web/lib/threads.mjs): part
   `part` runs the program on its own pointer table, `tables + part * table_len`, and leaves its result (0, or 1 +
   the failing record) in `failed[part]`. */
#include "entries.h"

API void run_program_part(int part, int parts, const int *words, int n_words, void *const *tables, int table_len,
                          int *failed) {
  (void)parts;
  failed[part] = run_program(words, n_words, tables + part * table_len);
}
