/* banned.h - functions that must not be used (git banned.h): unbounded copies, non-reentrant
 * time and tokenizer functions, atoi without error reporting. Include it LAST in a .c file,
 * after every system header. `make check-banned` (part of `make test`) also greps the tree
 * for these names, so a file that forgets the include is still caught. */
#ifndef FP_BASE_BANNED_H
#define FP_BASE_BANNED_H

#define BANNED(func) sorry_##func##_is_a_banned_function

#undef strcpy
#define strcpy(x, y) BANNED(strcpy)
#undef strcat
#define strcat(x, y) BANNED(strcat)
#undef sprintf
#define sprintf(...) BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) BANNED(vsprintf)
#undef strtok
#define strtok(x, y) BANNED(strtok)
#undef atoi
#define atoi(x) BANNED(atoi)
#undef gmtime
#define gmtime(x) BANNED(gmtime)
#undef localtime
#define localtime(x) BANNED(localtime)

#endif
