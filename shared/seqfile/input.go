package seqfile

import "io"

// Chunker is an input that hands out its own buffers instead of copying
// into the caller's: the Reader decodes records where Chunk left them.
// A local file read through a buffer of its own (package source) is one:
// read through io.Reader, each byte would be copied twice before it is
// decoded. Chunk returns the input's next bytes, valid until the next
// call; at the end it returns no bytes and io.EOF. It may return bytes
// and an error together: the error comes after those bytes.
type Chunker interface {
	Chunk() ([]byte, error)
}

// input is what the Reader reads through: chunks of a Chunker, or of an
// io.Reader read into the input's own buffer, peeked in place. A peek
// that spans two chunks is copied into carry, which holds one record at
// most (readBufferSize).
type input struct {
	src   Chunker
	cur   []byte // unread bytes: of the last chunk, or of carry
	rest  []byte // unread bytes of the last chunk after carry's
	carry []byte
	err   error // the input's error, once cur and rest are read
}

// readerChunks reads an io.Reader into one buffer, a chunk at a time.
type readerChunks struct {
	r   io.Reader
	buf []byte
}

// maxEmptyReads is how many reads in a row may return nothing before the
// input is taken as stuck (io.ErrNoProgress, as bufio does).
const maxEmptyReads = 100

func (c *readerChunks) Chunk() ([]byte, error) {
	for i := 0; i < maxEmptyReads; i++ {
		n, err := c.r.Read(c.buf)
		if n > 0 || err != nil {
			return c.buf[:n], err
		}
	}
	return nil, io.ErrNoProgress
}

func newInput(r io.Reader) *input {
	if c, ok := r.(Chunker); ok {
		return &input{src: c}
	}
	return &input{src: &readerChunks{r: r, buf: make([]byte, readBufferSize)}}
}

// fill makes rest hold the next chunk, when cur and rest are read.
func (in *input) fill() error {
	for len(in.rest) == 0 {
		if in.err != nil {
			return in.err
		}
		var b []byte
		b, in.err = in.src.Chunk()
		if in.err == nil && len(b) == 0 {
			in.err = io.ErrNoProgress
		}
		in.rest = b
	}
	return nil
}

// Peek returns the next n bytes (n at most readBufferSize) without
// reading them, valid until the next call; fewer, with the error, when
// the input ends or fails before.
func (in *input) Peek(n int) ([]byte, error) {
	if n <= len(in.cur) {
		return in.cur[:n], nil
	}
	return in.peekSlow(n)
}

func (in *input) peekSlow(n int) ([]byte, error) {
	if len(in.cur) == 0 {
		// The peek starts where a chunk does: the chunk may hold it whole.
		if len(in.rest) == 0 {
			if err := in.fill(); err != nil {
				return nil, err
			}
		}
		in.cur, in.rest = in.rest, nil
		if n <= len(in.cur) {
			return in.cur[:n], nil
		}
	}
	// cur's bytes must outlive the chunk they are in: into carry, whose
	// start cur may already be (then this moves nothing).
	in.carry = append(in.carry[:0], in.cur...)
	for len(in.carry) < n {
		if len(in.rest) == 0 {
			if err := in.fill(); err != nil {
				in.cur = in.carry
				return in.cur, err
			}
		}
		k := min(n-len(in.carry), len(in.rest))
		in.carry = append(in.carry, in.rest[:k]...)
		in.rest = in.rest[k:]
	}
	in.cur = in.carry
	return in.cur[:n], nil
}

// Discard skips n bytes that Peek returned.
func (in *input) Discard(n int) {
	in.cur = in.cur[n:]
	if len(in.cur) == 0 {
		in.cur, in.rest = in.rest, nil
	}
}

// Read implements io.Reader, for fields read whole (io.ReadFull).
func (in *input) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if len(in.cur) == 0 {
		if len(in.rest) == 0 {
			if err := in.fill(); err != nil {
				return 0, err
			}
		}
		in.cur, in.rest = in.rest, nil
	}
	n := copy(p, in.cur)
	in.Discard(n)
	return n, nil
}
