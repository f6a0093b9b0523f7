package table

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sort"

	"spangle/storaged/blockcache"
)

// errShortCached reports a cached buffer too short for the digest it
// says it has; a digest is made here, so this is a bug, not bad data.
var errShortCached = errors.New("cached block shorter than its digest")

// A data block in the block cache carries a digest of its restart keys
// after its own bytes. Finding the restart point to scan from otherwise
// probes restart keys across the block, and on a node serving more data
// than the CPU caches hold each probe is a miss to memory; the digest puts
// what the search compares in the one or two cache lines at the block's
// end, next to the restart array the scan reads anyway. A cached buffer is
//
//	[block][common prefix][key prefix of each restart][tail]
//
// where the common prefix is what every restart key of the block starts
// with (at most maxDigestCommon bytes), each restart key's prefix is the 8
// bytes after it, zero-padded and big-endian, and the tail holds the
// common prefix's length (1 byte), the restart count (2 bytes, 0 for a
// block given no digest) and the block's length (4 bytes).
//
// Comparing two keys that start with the common prefix by their 8-byte
// prefixes decides their order whenever the prefixes differ; only
// restart keys whose prefix equals the key's are compared whole.
const (
	digestTailLen     = 7
	maxDigestCommon   = 16
	maxDigestRestarts = 256 // a block with more is searched without a digest
)

// digestLen is the most a digest of block b can take: its size when
// the common prefix is as long as allowed.
func digestLen(b []byte) int {
	_, n, err := blockLayout(b)
	if err != nil || n > maxDigestRestarts {
		return digestTailLen
	}
	return maxDigestCommon + 8*n + digestTailLen
}

// appendDigest appends block b's digest to b and returns the cached form.
// b must have digestLen(b) bytes of spare capacity, so that b's bytes stay
// where they are. A block whose restart keys do not parse gets an empty
// digest, and so does one whose restart keys are out of order (a table
// not written right); seekCached then searches it as seekBlock does.
func appendDigest(b []byte) []byte {
	size := len(b)
	end, n, err := blockLayout(b)
	if err != nil || n > maxDigestRestarts {
		return appendDigestTail(b, 0, 0, size)
	}
	first, err1 := restartUserKey(b, end, 0)
	last, err2 := restartUserKey(b, end, n-1)
	if err1 != nil || err2 != nil {
		return appendDigestTail(b, 0, 0, size)
	}
	common := min(len(first), len(last), maxDigestCommon)
	common = commonPrefix(first[:common], last[:common])
	b = append(b, first[:common]...)
	var prev []byte
	for i := range n {
		k, err := restartUserKey(b[:size], end, i)
		// The search assumes the restart keys in order, as a table
		// written right has them, and so all starting with the prefix
		// the first and last share.
		if err != nil || bytes.Compare(k, prev) < 0 || !bytes.HasPrefix(k, first[:common]) {
			return appendDigestTail(b[:size], 0, 0, size)
		}
		b = binary.BigEndian.AppendUint64(b, KeyPrefix(k[common:]))
		prev = k
	}
	return appendDigestTail(b, common, n, size)
}

// digested turns a block just read into its cached form, moving it into a
// larger buffer of the cache's first when its spare capacity (a buffer's
// size is rounded up) cannot hold the digest.
func (t *sstable) digested(k blockcache.Key, b []byte) []byte {
	if need := digestLen(b); cap(b)-len(b) < need {
		nb := t.blocks.Buffer(k, len(b)+need)[:len(b)]
		copy(nb, b)
		t.blocks.Discard(k, b)
		b = nb
	}
	return appendDigest(b)
}

func appendDigestTail(b []byte, common, restarts, size int) []byte {
	b = append(b, byte(common))
	b = binary.LittleEndian.AppendUint16(b, uint16(restarts))
	return binary.LittleEndian.AppendUint32(b, uint32(size))
}

// KeyPrefix is k's first 8 bytes, zero-padded, as a big-endian number:
// KeyPrefix(a) < KeyPrefix(b) implies a < b, so most comparisons of keys
// can be made on it.
func KeyPrefix(k []byte) uint64 {
	if len(k) >= 8 {
		return binary.BigEndian.Uint64(k)
	}
	var p [8]byte
	copy(p[:], k)
	return binary.BigEndian.Uint64(p[:])
}

// restartUserKey is the user key stored at restart point i.
func restartUserKey(b []byte, end, i int) ([]byte, error) {
	k, err := restartKey(b, end, i)
	if err != nil {
		return nil, err
	}
	return userKey(k)
}

// seekCached is seekBlock for a block in its cached form (appendDigest):
// the restart point to scan from is found in the digest.
func seekCached(c []byte, key []byte) (value []byte, kind byte, found bool, err error) {
	if len(c) < digestTailLen {
		return nil, 0, false, errShortCached
	}
	tail := c[len(c)-digestTailLen:]
	common := int(tail[0])
	n := int(binary.LittleEndian.Uint16(tail[1:]))
	size := int(binary.LittleEndian.Uint32(tail[3:]))
	if size > len(c)-digestTailLen-common-8*n {
		return nil, 0, false, errShortCached
	}
	b := c[:size]
	if n == 0 {
		return seekBlock(b, key)
	}
	digest := c[size : len(c)-digestTailLen]
	prefixes := digest[common:]
	end := size - 4 - 4*n
	// r is the first restart point whose key is not below key, as in
	// seekBlock.
	var r int
	switch bytes.Compare(key[:min(len(key), common)], digest[:common]) {
	case -1:
		r = 0 // below every restart key
	case 1:
		r = n // above every restart key
	default:
		kp := KeyPrefix(key[common:])
		at := func(i int) uint64 { return binary.BigEndian.Uint64(prefixes[8*i:]) }
		lo := sort.Search(n, func(i int) bool { return at(i) >= kp })
		hi := lo
		for hi < n && at(hi) == kp {
			hi++
		}
		// Restart keys in [lo, hi) share key's prefix: compare them whole.
		r = lo + sort.Search(hi-lo, func(j int) bool {
			k, _ := restartUserKey(b, end, lo+j) // parsed when the digest was made
			return bytes.Compare(k, key) >= 0
		})
	}
	return scanBlock(b, end, r, key)
}
