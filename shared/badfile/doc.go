// Package badfile is the error the input formats' readers (seqfile,
// sparkey) return for a file that is not what it should be: which file,
// at which byte, and why, matching the format's own sentinel (say
// seqfile.ErrCorrupt) with errors.Is, so that callers tell bad input
// apart from an I/O failure worth a retry.
package badfile
