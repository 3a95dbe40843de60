#!/usr/bin/env bash
# A terminal agent for the tests: it waits at a prompt, reads a line (with
# readline, which asks for bracketed paste), and answers an ask the way the
# wake text says, with `parley room say ROOM TEXT --reply-to ID`. It logs
# when it took each line and when its answer was sent ($FAKE_LOG).
while IFS= read -e -r -p '> ' line; do
	start=$EPOCHREALTIME
	id=$(printf '%s\n' "$line" | grep -o -- '--reply-to [^ ]*' | head -n 1 | cut -d ' ' -f 2)
	room=$(printf '%s\n' "$line" | grep -o -- 'parley room say [^ ]*' | head -n 1 | cut -d ' ' -f 4)
	if [ -n "$id" ] && [ -n "$room" ]; then
		parley room say "$room" "${FAKE_ANSWER:-the port is 8080}" --reply-to "$id" >/dev/null
		echo "answered $id"
	else
		echo "nothing to answer"
	fi
	printf 'took %s done %s\n' "$start" "$EPOCHREALTIME" >>"${FAKE_LOG:-/dev/null}"
done
