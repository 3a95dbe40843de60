package main

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-mesh/parley/internal/atomicfile"
	"github.com/parley-mesh/parley/node"
)

type backupResult struct {
	File  string `json:"file"`
	Bytes int64  `json:"bytes"`
}

func backupCmd(g *globals) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "backup FILE",
		Short: "Write a backup of the running node (its key, config, audit log and database) to FILE",
		Long: `Write a backup of the running node to FILE, a zip archive: its key, config, audit log and a
consistent copy of its database, while the node goes on. The file holds the node's private key
(mode 0600): keep it as safe as identity.key. ` + "`parley restore FILE`" + ` makes a new home of it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dst, err := filepath.Abs(args[0])
			if err != nil {
				return err
			}
			if st, err := os.Stat(filepath.Dir(dst)); err != nil || !st.IsDir() {
				return fmt.Errorf("%s is not a folder: name a backup's file in a folder that exists", filepath.Dir(dst))
			}
			// A link (even one to nothing) is a file that exists.
			if _, err := os.Lstat(dst); err == nil {
				if st, err := os.Stat(dst); err == nil && st.IsDir() {
					return fmt.Errorf("%s is a folder: name the backup's file", dst)
				}
				if !force {
					return fmt.Errorf("%s exists: name a new file, or pass --force to replace it", dst)
				}
			}
			partial := "." + filepath.Base(dst) + ".partial-"
			tmp, lock, err := lockedPart(filepath.Dir(dst), partial)
			if err != nil {
				return fmt.Errorf("backup: %w", err)
			}
			defer lock.Close() // the part's lock, held until it is FILE
			removeKilledParts(filepath.Dir(dst), partial, tmp.Name())
			kept := false
			defer func() {
				if !kept {
					tmp.Close()
					os.Remove(tmp.Name())
				}
			}()
			c, _, cancel, err := g.client(cmd)
			if err != nil {
				return err
			}
			cancel() // the copy takes as long as the database needs: Ctrl-C stops it
			// Ctrl-C (or a TERM) ends the copy, not the process, so the
			// part written (which holds the node's key) is removed.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			n, err := c.Backup(ctx, tmp)
			if err != nil {
				if ctx.Err() != nil && cmd.Context().Err() == nil {
					return errors.New("backup stopped: nothing was written")
				}
				return g.apiErr(err)
			}
			if err := tmp.Sync(); err != nil {
				return fmt.Errorf("backup: %w", err)
			}
			if err := tmp.Close(); err != nil {
				return fmt.Errorf("backup: %w", err)
			}
			if err := checkBackup(tmp.Name()); err != nil {
				return err
			}
			if force {
				err = os.Rename(tmp.Name(), dst)
			} else if err = os.Link(tmp.Name(), dst); err == nil {
				os.Remove(tmp.Name())
			}
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%s was made meanwhile: name a new file, or pass --force to replace it", dst)
			}
			if err != nil {
				return fmt.Errorf("backup: %w", err)
			}
			kept = true
			// The link or rename is durable only once the folder is: else
			// a power loss may leave no backup, or the one it replaced.
			if err := atomicfile.SyncDir(filepath.Dir(dst)); err != nil {
				return fmt.Errorf("backup: written to %s, but %w", dst, err)
			}
			return printOut(g, cmd.OutOrStdout(), backupResult{File: dst, Bytes: n}, func(w io.Writer, r backupResult) {
				fmt.Fprintf(w, "backup written to %s (%d bytes). It holds the node's private key: keep it as safe as identity.key.\n", r.File, r.Bytes)
				fmt.Fprintf(w, "To make a node of it: parley --home NEW_HOME restore %s\n", r.File)
			})
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "replace FILE if it exists")
	return cmd
}

// lockedPart creates a backup's part in dir (named prefix…) and locks it
// while it is written, by a descriptor of its own (closing the part's
// releases nothing): a backup killed outright (no Ctrl-C to clean up
// after) leaves its part, a copy of the node's key, unlocked, and the next
// backup to the same file removes it (removeKilledParts); another's part
// still written is kept. A part removed by another backup before it was
// locked is made again.
func lockedPart(dir, prefix string) (tmp, lock *os.File, err error) {
	for range 10 {
		tmp, err := os.CreateTemp(dir, prefix)
		if err != nil {
			return nil, nil, err
		}
		lock, err := os.Open(tmp.Name())
		if err == nil {
			if err = syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
				st, serr := tmp.Stat()
				named, nerr := os.Lstat(tmp.Name())
				if serr == nil && nerr == nil && os.SameFile(st, named) {
					return tmp, lock, nil
				}
			}
			lock.Close()
		}
		tmp.Close()
		os.Remove(tmp.Name())
		if err != nil && !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, err
		}
	}
	return nil, nil, fmt.Errorf("could not make a part of the backup in %s: other backups remove it", dir)
}

// removeKilledParts removes the parts of backups to the same file (in dir,
// named prefix…) that no backup holds locked: ones whose backup was killed
// before it could remove them. own is this backup's part.
func removeKilledParts(dir, prefix, own string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		path := filepath.Join(dir, e.Name())
		if !strings.HasPrefix(e.Name(), prefix) || !e.Type().IsRegular() || path == own {
			continue
		}
		f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0) // never waits on a FIFO put there
		if err != nil {
			continue
		}
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && fileOwnedByMe(st) &&
			syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			os.Remove(path)
		}
		f.Close()
	}
}

// fileOwnedByMe reports whether st is a file of this user.
func fileOwnedByMe(st fs.FileInfo) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && int(sys.Uid) == os.Geteuid()
}

// checkBackup opens a backup as restore will and reads every file's
// checksum: a copy the disk cut short is not kept under its name.
func checkBackup(path string) error {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return fmt.Errorf("backup: the copy written does not read back: %w", err)
	}
	defer zr.Close()
	for _, f := range zr.File {
		r, err := f.Open()
		if err == nil {
			_, err = io.Copy(io.Discard, r)
			r.Close()
		}
		if err != nil {
			return fmt.Errorf("backup: the copy written does not read back (%s): %w", f.Name, err)
		}
	}
	return nil
}

type restoreResult struct {
	Home string `json:"home"`
	Peer string `json:"peer_id"`
	// Made is when the backup was taken; From the home it was taken of,
	// when the backup says.
	Made time.Time `json:"made"`
	From string    `json:"from,omitempty"`
	// Loopback: the node copied last ran with --loopback; so is the
	// restored one started.
	Loopback bool `json:"loopback,omitempty"`
}

func restoreCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "restore FILE",
		Short: "Make a new home of a backup (parley backup): the node it holds, as it was then",
		Long: `Make a new home (--home, else $PARLEY_HOME or ~/.parley; it must not exist yet, or be an empty
folder) of a backup written by ` + "`parley backup`" + `. Started, the restored node is an older copy of
itself: it learns its own later events from its rooms' members before it posts, and its contacts
put its contact book right. Do not run it beside the node it was copied from.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			home, err := g.resolveHome()
			if err != nil {
				return err
			}
			got, err := node.Restore(home, args[0])
			if err != nil {
				return err
			}
			res := restoreResult{Home: home, Peer: got.Peer.String(), Made: got.Made.UTC(), From: got.Home, Loopback: got.Loopback}
			return printOut(g, cmd.OutOrStdout(), res, func(w io.Writer, r restoreResult) {
				fmt.Fprintf(w, "node %s restored into %s, from a copy made %s.\n", r.Peer, r.Home, r.Made.Format("2006-01-02 15:04:05 MST"))
				fmt.Fprintf(w, "It is an older copy of that node: what it did since %s (posts, rooms, contacts made or revoked) it learns back from its peers as they connect; contact requests denied since, and agents muted or killed since, are forgotten (mute or kill them again: `parley agent mute`, `parley agent kill`; the audit log ends at the copy too).\n",
					r.Made.Format("2006-01-02 15:04"))
				// The inbox's read marks count arrivals in one store: the
				// restored store gives what it learns back arrivals of its
				// own, so the live home's marks cannot be carried over.
				fmt.Fprintf(w, "Its agents' read marks are from then too: what reached the node since (messages, asks, replies, invitations) is shown to them again, once, as new, though they were shown it before; an ask they answered since may be shown again until their answer comes back, then it is no longer owed.\n")
				stopIt := "`parley down` on its home"
				if r.From != "" {
					stopIt = "`parley " + strings.Join(append(homeArgs(r.From), "down"), " ") + "`"
				}
				fmt.Fprintf(w, "Run it in place of the node it was copied from, never beside it: stop that one first (%s).\n", stopIt)
				start := append(homeArgs(r.Home), "up")
				if r.Loopback {
					start = append(start, "--loopback") // as the node copied last ran
				}
				fmt.Fprintf(w, "Start it with: parley %s\n", strings.Join(start, " "))
			})
		},
	}
}
