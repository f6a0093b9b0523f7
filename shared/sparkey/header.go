package sparkey

import (
	"encoding/binary"
	"fmt"
)

// Magic numbers, versions and header sizes of the two files.
const (
	logMagic        = 0x49b39c95
	indexMagic      = 0x9a11318f
	LogHeaderSize   = 84
	IndexHeaderSize = 112
)

// Compression is a log's block compression.
type Compression uint32

// The compressions libsparkey writes.
const (
	None   Compression = 0
	Snappy Compression = 1
	Zstd   Compression = 2
)

func (c Compression) String() string {
	switch c {
	case None:
		return "none"
	case Snappy:
		return "snappy"
	case Zstd:
		return "zstd"
	}
	return fmt.Sprintf("compression(%d)", uint32(c))
}

// MaxBlockSize bounds a compressed log's block size: libsparkey's writer
// takes any size, but a block is decompressed into one buffer, so a
// header claiming more is refused rather than allocated.
const MaxBlockSize = 64 << 20

// LogHeader is a log's header.
type LogHeader struct {
	FileID             uint32
	Puts, Deletes      uint64
	DataEnd            uint64
	MaxKeyLen          uint64
	MaxValueLen        uint64
	DeleteSize         uint64
	Compression        Compression
	BlockSize          uint32
	PutSize            uint64
	MaxEntriesPerBlock uint32
}

// IndexHeader is an index's header.
type IndexHeader struct {
	Minor             uint32
	FileID            uint32
	Seed              uint32
	DataEnd           uint64
	MaxKeyLen         uint64
	MaxValueLen       uint64
	Puts              uint64
	Garbage           uint64
	Entries           uint64
	AddressSize       uint32
	HashSize          uint32
	Capacity          uint64
	MaxDisplacement   uint64
	EntryBlockBits    uint32
	Collisions        uint64
	TotalDisplacement uint64
}

// SlotSize is the bytes of one slot.
func (h *IndexHeader) SlotSize() int { return int(h.AddressSize + h.HashSize) }

// parseLogHeader checks and decodes a log header. size is the file's
// size, or -1 when unknown.
func parseLogHeader(b []byte, file string, size int64) (LogHeader, error) {
	le := binary.LittleEndian
	if m := le.Uint32(b[0:]); m != logMagic {
		return LogHeader{}, corrupt(file, 0, nil, "not a Sparkey log: magic %#08x", m)
	}
	if v := le.Uint32(b[4:]); v != 1 {
		return LogHeader{}, corrupt(file, 4, nil, "log major version %d, want 1", v)
	}
	if v := le.Uint32(b[8:]); v != 0 {
		return LogHeader{}, corrupt(file, 8, nil, "log minor version %d, want 0", v)
	}
	h := LogHeader{
		FileID:             le.Uint32(b[12:]),
		Puts:               le.Uint64(b[16:]),
		Deletes:            le.Uint64(b[24:]),
		DataEnd:            le.Uint64(b[32:]),
		MaxKeyLen:          le.Uint64(b[40:]),
		MaxValueLen:        le.Uint64(b[48:]),
		DeleteSize:         le.Uint64(b[56:]),
		Compression:        Compression(le.Uint32(b[64:])),
		BlockSize:          le.Uint32(b[68:]),
		PutSize:            le.Uint64(b[72:]),
		MaxEntriesPerBlock: le.Uint32(b[80:]),
	}
	switch {
	case h.DataEnd < LogHeaderSize:
		return h, corrupt(file, 32, nil, "data end %d inside the header", h.DataEnd)
	case size >= 0 && h.DataEnd > uint64(size):
		return h, corrupt(file, 32, nil, "data end %d beyond the file's %d bytes", h.DataEnd, size)
	case h.Puts > h.DataEnd || h.Deletes > h.DataEnd:
		return h, corrupt(file, 16, nil, "%d puts and %d deletes cannot fit %d bytes", h.Puts, h.Deletes, h.DataEnd)
	case h.Compression > Zstd:
		return h, corrupt(file, 64, nil, "unknown compression type %d", uint32(h.Compression))
	case h.Compression != None && (h.BlockSize == 0 || h.BlockSize > MaxBlockSize):
		return h, corrupt(file, 68, nil, "block size %d out of range (1..%d)", h.BlockSize, MaxBlockSize)
	case h.MaxEntriesPerBlock > 1<<30:
		return h, corrupt(file, 80, nil, "%d entries per block", h.MaxEntriesPerBlock)
	}
	return h, nil
}

// parseIndexHeader checks and decodes an index header.
func parseIndexHeader(b []byte, file string) (IndexHeader, error) {
	le := binary.LittleEndian
	if m := le.Uint32(b[0:]); m != indexMagic {
		return IndexHeader{}, corrupt(file, 0, nil, "not a Sparkey index: magic %#08x", m)
	}
	if v := le.Uint32(b[4:]); v != 1 {
		return IndexHeader{}, corrupt(file, 4, nil, "index major version %d, want 1", v)
	}
	h := IndexHeader{
		Minor:             le.Uint32(b[8:]),
		FileID:            le.Uint32(b[12:]),
		Seed:              le.Uint32(b[16:]),
		DataEnd:           le.Uint64(b[20:]),
		MaxKeyLen:         le.Uint64(b[28:]),
		MaxValueLen:       le.Uint64(b[36:]),
		Puts:              le.Uint64(b[44:]),
		Garbage:           le.Uint64(b[52:]),
		Entries:           le.Uint64(b[60:]),
		AddressSize:       le.Uint32(b[68:]),
		HashSize:          le.Uint32(b[72:]),
		Capacity:          le.Uint64(b[76:]),
		MaxDisplacement:   le.Uint64(b[84:]),
		EntryBlockBits:    le.Uint32(b[92:]),
		Collisions:        le.Uint64(b[96:]),
		TotalDisplacement: le.Uint64(b[104:]),
	}
	switch {
	case h.Minor > 1:
		return h, corrupt(file, 8, nil, "index minor version %d, want 0 or 1", h.Minor)
	case h.HashSize != 4 && h.HashSize != 8:
		return h, corrupt(file, 72, nil, "hash size %d, want 4 or 8", h.HashSize)
	case h.AddressSize != 4 && h.AddressSize != 8:
		return h, corrupt(file, 68, nil, "address size %d, want 4 or 8", h.AddressSize)
	case h.Entries > h.Puts:
		return h, corrupt(file, 60, nil, "%d live entries but %d puts", h.Entries, h.Puts)
	case h.Entries > h.Capacity:
		return h, corrupt(file, 76, nil, "%d live entries in %d slots", h.Entries, h.Capacity)
	case h.Capacity > h.DataEnd*2+1:
		// libsparkey sizes the table at 1.3 slots per put, and every put
		// takes at least two bytes of the log.
		return h, corrupt(file, 76, nil, "capacity %d out of proportion to a %d-byte log", h.Capacity, h.DataEnd)
	case h.EntryBlockBits > 32:
		return h, corrupt(file, 92, nil, "entry block bits %d", h.EntryBlockBits)
	}
	return h, nil
}

func putLogHeader(b []byte, h *LogHeader) {
	le := binary.LittleEndian
	le.PutUint32(b[0:], logMagic)
	le.PutUint32(b[4:], 1)
	le.PutUint32(b[8:], 0)
	le.PutUint32(b[12:], h.FileID)
	le.PutUint64(b[16:], h.Puts)
	le.PutUint64(b[24:], h.Deletes)
	le.PutUint64(b[32:], h.DataEnd)
	le.PutUint64(b[40:], h.MaxKeyLen)
	le.PutUint64(b[48:], h.MaxValueLen)
	le.PutUint64(b[56:], h.DeleteSize)
	le.PutUint32(b[64:], uint32(h.Compression))
	le.PutUint32(b[68:], h.BlockSize)
	le.PutUint64(b[72:], h.PutSize)
	le.PutUint32(b[80:], h.MaxEntriesPerBlock)
}

func putIndexHeader(b []byte, h *IndexHeader) {
	le := binary.LittleEndian
	le.PutUint32(b[0:], indexMagic)
	le.PutUint32(b[4:], 1)
	le.PutUint32(b[8:], 1)
	le.PutUint32(b[12:], h.FileID)
	le.PutUint32(b[16:], h.Seed)
	le.PutUint64(b[20:], h.DataEnd)
	le.PutUint64(b[28:], h.MaxKeyLen)
	le.PutUint64(b[36:], h.MaxValueLen)
	le.PutUint64(b[44:], h.Puts)
	le.PutUint64(b[52:], h.Garbage)
	le.PutUint64(b[60:], h.Entries)
	le.PutUint32(b[68:], h.AddressSize)
	le.PutUint32(b[72:], h.HashSize)
	le.PutUint64(b[76:], h.Capacity)
	le.PutUint64(b[84:], h.MaxDisplacement)
	le.PutUint32(b[92:], h.EntryBlockBits)
	le.PutUint64(b[96:], h.Collisions)
	le.PutUint64(b[104:], h.TotalDisplacement)
}
