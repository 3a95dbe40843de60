// Package store is Parley's Badger database: laptop-sized options and the
// whole key schema (schema/schema.go). Everything a node persists lives in
// one Badger folder under the node's home.
//
// Opening checks the folder first (Check): a database Badger would lose data
// opening (MANIFEST lost or emptied while tables remain, a table missing,
// cut short or failing its checksums) is refused with ErrCorrupt and left as
// it is. Reads verify checksums; damage reads as ErrCorrupt, never as data.
//
// Badger writes through mmapped sparse files, where a full disk is a
// SIGBUS, so writes are refused with ErrDiskFull while the free space would
// fall below a floor (Config.MinFree), and a reserve file (ReserveName) is
// given to Badger when it must write on a short disk: at Open and Close.
//
// Sync flushes a write journal (JournalName), not Badger: every write is
// appended to it after Badger takes it, and Open writes its current epoch
// into Badger again after a crash (journal.go).
package store
