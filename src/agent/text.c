/* text.c - see text.h. */
#include "agent/text.h"

#include <ctype.h>
#include <string.h>

#include "base/banned.h"

void agent_text_trim(char *s)
{
	size_t n = strlen(s), i = 0;
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	while (s[i] && isspace((unsigned char)s[i]))
		i++;
	if (i > 0)
		memmove(s, s + i, n - i + 1);
}
