package board

// Blocking returns the claims that hold one of the files (as a commit
// stages them: each a file's name as it is, a "*" in it no glob, and of
// any length; see Match) against the one committing: another's
// claim that overlaps a file none of the committer's own claims (mine)
// covers. A file the committer holds a claim on is its own to commit,
// whatever other claim overlaps it as well: two claims may be granted
// side by side and both reach a file (a folder, pkg/new, and a glob that
// reaches into it only through a star, **/*.go: Overlap sets them apart).
// Before, the git guard refused each one's commit of pkg/new/a.go as the
// other's; now the file goes with the committer's own claim.
func Blocking[C any](files []string, claims []C, path func(C) string, mine func(C) bool) []C {
	var out []C
	in := make([]bool, len(claims))
	for _, f := range files {
		var theirs []int
		own := false
		for i, c := range claims {
			if !Match(path(c), f) {
				continue
			}
			if mine(c) {
				own = true
				break
			}
			theirs = append(theirs, i)
		}
		if own {
			continue
		}
		for _, i := range theirs {
			in[i] = true
		}
	}
	for i, c := range claims {
		if in[i] {
			out = append(out, c)
		}
	}
	return out
}
