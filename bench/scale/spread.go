package scale

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// topDirFlag is FS_TOPDIR_FL (linux/fs.h): a directory whose
// subdirectories ext4's Orlov allocator spreads over the block groups as
// if they were made at the filesystem's root.
const topDirFlag = 0x00020000

// spreadDirs marks dir so that ext4 puts each of its subdirectories (the
// stores, the datasets) in a block group with few directories, rather
// than next to dir's own, where earlier runs' files were. On ext4 without
// a journal, as on this VM, each new inode is looked for from the start
// of its group, past every inode freed in the last minute or more
// (recently_deleted in fs/ext4/ialloc.c): a run right after another that
// removed 40,000 files spent 40% of storaged's CPU there, and three times
// the system time of the first. Filesystems without the flag say so.
func spreadDirs(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("scale: %w", err)
	}
	defer f.Close()
	fd := int(f.Fd())
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		return fmt.Errorf("scale: reading %s's flags: %w", dir, err)
	}
	if err := unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(flags|topDirFlag)); err != nil {
		return fmt.Errorf("scale: marking %s a top directory: %w", dir, err)
	}
	return nil
}
