#!/usr/bin/env bash
# A terminal agent for the tests: a prompt, one line read with readline
# (which asks the terminal for bracketed paste), a moment of work with
# output, an answer. Every line it takes is appended to $FAKE_LOG.
work=${FAKE_WORK:-0.2}
while IFS= read -e -r -p '> ' line; do
	printf '%s\n' "$line" >>"${FAKE_LOG:-/dev/null}"
	echo "working on ${#line} characters"
	sleep "$work"
	echo "got: $line"
done
