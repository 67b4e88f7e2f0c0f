// powerloss-fs: a FUSE loopback filesystem that loses what was not fsynced when the power goes.
//
// etcd's robustness suite runs members on LazyFS, a FUSE filesystem that holds written data in
// memory until it is fsynced, so that a simulated power loss drops exactly what a real disk
// could lose. LazyFS (C++, libfuse 3) cannot be built here; this is the same idea in a small Go
// program on go-fuse, built from the Go module proxy on first use by
// harness/providers/local/powerloss_fs.py.
//
//	powerloss-fs --backing DIR --mount DIR
//
// mounts a loopback of DIR (as root, with the mount(2) syscall: no fusermount is needed) and
// prints "ready" once the mount serves. Then:
//
//   - Metadata operations (create, mkdir, rename, unlink, rmdir, link, symlink, chmod, chown,
//     utimes, fallocate) go to the backing directory at once. That is gentler than a real power
//     loss, which can also lose a rename or a create that was not followed by a directory fsync.
//   - File data (writes, and size changes by truncate or by writing past the end) stays in this
//     process, per inode, as 4 KiB pages plus a logical size. Reads, including the kernel's page
//     fills for mmap, see it, and getattr reports the logical size.
//   - fsync or fdatasync on any handle of a file writes that file's pages and size to the
//     backing file and fsyncs it. Closing a file does not.
//   - SIGUSR1 is the power loss: every unsynced page and size change is dropped, one JSON line
//     {"dropped_bytes": N, "dropped_files": M} goes to stdout, the mount goes, exit 0.
//   - SIGTERM or SIGINT is a clean power-off: everything is written and fsynced first, one JSON
//     line {"synced_bytes": N, "synced_files": M}, the mount goes, exit 0.
//
// Unsynced data costs a 4 KiB page of memory per page touched, without limit.
//
// Kernel caching stays as it is for any FUSE loopback without writeback cache: writes reach
// this process at once (write-through) and the page cache holds what we returned, so mmap reads
// agree with read(2). FUSE passthrough is switched off: it would send reads and writes straight
// to the backing file, past the memory that is the point of this program.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

const pageSize = 4096

// file is one inode's unsynced data. It owns an O_RDWR descriptor of the backing inode, so the
// inode (and its number, the key) cannot be reused while data for it is pending, and so a
// shutdown can write it after every handle is closed.
type file struct {
	mu    sync.Mutex
	fd    int
	pages map[int64]*page // page index -> whole page content
	size  int64           // logical size
	// Backing data at or beyond low is stale (the file was truncated below it in memory) and
	// reads as zeros; shrunk says low moved below the backing size we started from.
	low     int64
	shrunk  bool
	resized bool // the size was changed by a write past the end or a truncate
	gone    bool // persisted or dropped: look the inode up again
}

type page struct {
	b      [pageSize]byte
	lo, hi int // the written part, for counting dropped bytes
}

// state holds every inode with unsynced data. world is held shared by every data operation and
// exclusively by a power-off, which never gives it back: nothing reaches the backing afterwards.
type state struct {
	world sync.RWMutex
	mu    sync.Mutex
	files map[uint64]*file
}

var st = &state{files: map[uint64]*file{}}

// get returns the inode's pending data, locked, or nil if there is none.
func (s *state) get(ino uint64) *file {
	for {
		s.mu.Lock()
		f := s.files[ino]
		s.mu.Unlock()
		if f == nil {
			return nil
		}
		f.mu.Lock()
		if !f.gone {
			return f
		}
		f.mu.Unlock()
	}
}

// getOrCreate returns the inode's pending data, locked, creating it from a descriptor of the
// backing inode (reopened O_RDWR through /proc, so a read-only handle or a renamed or unlinked
// file work as well).
func (s *state) getOrCreate(ino uint64, fd int) (*file, syscall.Errno) {
	for {
		s.mu.Lock()
		f := s.files[ino]
		if f == nil {
			rw, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", fd), unix.O_RDWR|unix.O_CLOEXEC, 0)
			if err != nil {
				s.mu.Unlock()
				return nil, fs.ToErrno(err)
			}
			var sb unix.Stat_t
			if err := unix.Fstat(rw, &sb); err != nil {
				unix.Close(rw)
				s.mu.Unlock()
				return nil, fs.ToErrno(err)
			}
			f = &file{fd: rw, pages: map[int64]*page{}, size: sb.Size, low: sb.Size}
			s.files[ino] = f
		}
		s.mu.Unlock()
		f.mu.Lock()
		if !f.gone {
			return f, 0
		}
		f.mu.Unlock()
	}
}

// forget ends f (locked by the caller): its descriptor closes and the inode is clean again.
func (s *state) forget(ino uint64, f *file) {
	f.gone = true
	unix.Close(f.fd)
	s.mu.Lock()
	if s.files[ino] == f {
		delete(s.files, ino)
	}
	s.mu.Unlock()
}

// page returns page i, filled from the backing file (below low) on first touch.
func (f *file) page(i int64) *page {
	p := f.pages[i]
	if p == nil {
		p = &page{lo: pageSize}
		start := i * pageSize
		if n := min(int64(pageSize), f.low-start); n > 0 {
			unix.Pread(f.fd, p.b[:n], start) // a short read leaves zeros, as a hole reads
		}
		f.pages[i] = p
	}
	return p
}

func (f *file) write(data []byte, off int64) {
	for done := 0; done < len(data); {
		pos := off + int64(done)
		i, po := pos/pageSize, int(pos%pageSize)
		p := f.page(i)
		n := copy(p.b[po:], data[done:])
		p.lo, p.hi = min(p.lo, po), max(p.hi, po+n)
		done += n
	}
	if end := off + int64(len(data)); end > f.size {
		f.size, f.resized = end, true
	}
}

func (f *file) truncate(size int64) {
	if size < f.size {
		for i, p := range f.pages {
			start := i * pageSize
			if start >= size {
				delete(f.pages, i)
			} else if cut := int(size - start); cut < pageSize {
				clear(p.b[cut:]) // so that growing again reads zeros
				p.hi = min(p.hi, cut)
			}
		}
		if size < f.low {
			f.low, f.shrunk = size, true
		}
	}
	if size != f.size {
		f.size, f.resized = size, true
	}
}

func (f *file) read(buf []byte, off int64) []byte {
	if off >= f.size {
		return buf[:0]
	}
	end := min(off+int64(len(buf)), f.size)
	out := buf[:end-off]
	clear(out)
	if n := min(end, f.low) - off; n > 0 {
		unix.Pread(f.fd, out[:n], off)
	}
	for i := off / pageSize; i*pageSize < end; i++ {
		if p := f.pages[i]; p != nil {
			start := i * pageSize
			from, to := max(off, start), min(end, start+pageSize)
			copy(out[from-off:to-off], p.b[from-start:to-start])
		}
	}
	return out
}

// dirtyBytes is what a power loss would take: the written parts of pages, within the size.
func (f *file) dirtyBytes() int64 {
	var n int64
	for i, p := range f.pages {
		if hi := min(int64(p.hi), f.size-i*pageSize); hi > int64(p.lo) {
			n += hi - int64(p.lo)
		}
	}
	return n
}

// persist writes pages and size to the backing file and syncs it.
func (f *file) persist(datasync bool) syscall.Errno {
	if f.shrunk {
		if err := unix.Ftruncate(f.fd, f.low); err != nil {
			return fs.ToErrno(err)
		}
	}
	for i, p := range f.pages {
		start := i * pageSize
		if n := min(int64(pageSize), f.size-start); n > 0 {
			if _, err := unix.Pwrite(f.fd, p.b[:n], start); err != nil {
				return fs.ToErrno(err)
			}
		}
	}
	var sb unix.Stat_t
	if err := unix.Fstat(f.fd, &sb); err != nil {
		return fs.ToErrno(err)
	}
	if sb.Size != f.size {
		if err := unix.Ftruncate(f.fd, f.size); err != nil {
			return fs.ToErrno(err)
		}
	}
	if datasync {
		return fs.ToErrno(unix.Fdatasync(f.fd))
	}
	return fs.ToErrno(unix.Fsync(f.fd))
}

// node is a loopback node whose files hold their data here until fsync.
type node struct {
	*fs.LoopbackNode
}

func (n *node) WrapChild(ctx context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	return &node{ops.(*fs.LoopbackNode)}
}

func (n *node) ino() uint64 { return n.StableAttr().Ino }

// wrap turns the loopback's handle into ours. O_TRUNC was kept out of the backing open: it is
// a size change, applied in memory.
func (n *node) wrap(fh fs.FileHandle, trunc bool) (fs.FileHandle, syscall.Errno) {
	lf := fh.(*fs.LoopbackFile)
	fd, _ := lf.PassthroughFd() // only the descriptor; passthrough itself is off
	h := &handle{lf: lf, fd: fd, ino: n.ino()}
	if trunc {
		st.world.RLock()
		defer st.world.RUnlock()
		f := st.get(h.ino)
		if f == nil {
			var sb unix.Stat_t
			if unix.Fstat(fd, &sb) == nil && sb.Size == 0 {
				return h, 0 // nothing to truncate (os.Create of a new file)
			}
			var errno syscall.Errno
			if f, errno = st.getOrCreate(h.ino, fd); errno != 0 {
				lf.Release(context.Background())
				return nil, errno
			}
		}
		f.truncate(0)
		f.mu.Unlock()
	}
	return h, 0
}

// OnForget: the kernel let go of the inode. If it was unlinked and closed, its pending data can
// never be read nor survive a crash: let it go too, with the descriptor that kept it on disk.
func (n *node) OnForget() {
	st.world.RLock()
	defer st.world.RUnlock()
	if f := st.get(n.ino()); f != nil {
		var sb unix.Stat_t
		if unix.Fstat(f.fd, &sb) == nil && sb.Nlink == 0 {
			st.forget(n.ino(), f)
		}
		f.mu.Unlock()
	}
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fl, errno := n.LoopbackNode.Open(ctx, flags&^syscall.O_TRUNC)
	if errno != 0 {
		return nil, 0, errno
	}
	h, errno := n.wrap(fh, flags&syscall.O_TRUNC != 0)
	return h, fl, errno
}

func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	ch, fh, fl, errno := n.LoopbackNode.Create(ctx, name, flags&^syscall.O_TRUNC, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	h, errno := ch.Operations().(*node).wrap(fh, flags&syscall.O_TRUNC != 0)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	logical(ch.StableAttr().Ino, &out.Attr)
	return ch, h, fl, 0
}

func (n *node) Tmpfile(ctx context.Context, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	ch, fh, fl, errno := n.LoopbackNode.Tmpfile(ctx, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	h, errno := ch.Operations().(*node).wrap(fh, false)
	return ch, h, fl, errno
}

func inner(f fs.FileHandle) fs.FileHandle {
	if h, ok := f.(*handle); ok {
		return h.lf
	}
	return f
}

// logical puts the size held here into attributes the loopback took from the backing file.
// Every reply carrying attributes needs it (lookup too): the kernel takes the size it is told,
// and would append at a stale end of file.
func logical(ino uint64, a *fuse.Attr) {
	if pf := st.get(ino); pf != nil {
		a.Size = uint64(pf.size)
		a.Blocks = max(a.Blocks, (a.Size+511)/512)
		pf.mu.Unlock()
	}
}

func (n *node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if errno := n.LoopbackNode.Getattr(ctx, inner(f), out); errno != 0 {
		return errno
	}
	logical(n.ino(), &out.Attr)
	return 0
}

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ch, errno := n.LoopbackNode.Lookup(ctx, name, out)
	if errno == 0 {
		logical(ch.StableAttr().Ino, &out.Attr)
	}
	return ch, errno
}

func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ch, errno := n.LoopbackNode.Link(ctx, target, name, out)
	if errno == 0 {
		logical(ch.StableAttr().Ino, &out.Attr)
	}
	return ch, errno
}

// Setattr keeps a size change in memory and passes mode, owner and times through.
func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if size, ok := in.GetSize(); ok {
		st.world.RLock()
		fd, closeFd := -1, false
		if h, ok := f.(*handle); ok {
			fd = h.fd
		} else {
			// truncate(2) by path: a descriptor of our own to take the size from.
			p := n.Path(nil)
			var err error
			if fd, err = unix.Open(n.RootData.Path+"/"+p, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0); err != nil {
				st.world.RUnlock()
				return fs.ToErrno(err)
			}
			closeFd = true
		}
		pf, errno := st.getOrCreate(n.ino(), fd)
		if closeFd {
			unix.Close(fd)
		}
		if errno != 0 {
			st.world.RUnlock()
			return errno
		}
		pf.truncate(int64(size))
		pf.mu.Unlock()
		st.world.RUnlock()
		in.Valid &^= fuse.FATTR_SIZE
	}
	if errno := n.LoopbackNode.Setattr(ctx, inner(f), in, out); errno != 0 {
		return errno
	}
	return n.Getattr(ctx, f, out)
}

// Copying file ranges in the backing would skip the pages held here; ENOSYS makes the kernel
// copy through read and write instead.
func (n *node) CopyFileRange(ctx context.Context, fhIn fs.FileHandle, offIn uint64, out *fs.Inode, fhOut fs.FileHandle,
	offOut uint64, length uint64, flags uint64) (uint32, syscall.Errno) {
	return 0, syscall.ENOSYS
}

// handle is an open file. It does not implement Lseek (SEEK_DATA/SEEK_HOLE would look at the
// backing file; without it the kernel answers from the size) nor PassthroughFd.
type handle struct {
	lf  *fs.LoopbackFile // owns fd
	fd  int
	ino uint64
}

func (h *handle) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	st.world.RLock()
	defer st.world.RUnlock()
	f := st.get(h.ino)
	if f == nil {
		return h.lf.Read(ctx, buf, off)
	}
	defer f.mu.Unlock()
	return fuse.ReadResultData(f.read(buf, off)), 0
}

func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	st.world.RLock()
	defer st.world.RUnlock()
	f, errno := st.getOrCreate(h.ino, h.fd)
	if errno != 0 {
		return 0, errno
	}
	defer f.mu.Unlock()
	f.write(data, off)
	return uint32(len(data)), 0
}

func (h *handle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	st.world.RLock()
	defer st.world.RUnlock()
	datasync := flags&1 != 0 // FUSE_FSYNC_FDATASYNC
	f := st.get(h.ino)
	if f == nil {
		if datasync {
			return fs.ToErrno(unix.Fdatasync(h.fd))
		}
		return fs.ToErrno(unix.Fsync(h.fd))
	}
	defer f.mu.Unlock()
	if errno := f.persist(datasync); errno != 0 {
		return errno // kept: a later fsync tries again
	}
	st.forget(h.ino, f)
	return 0
}

// Allocate passes preallocation through (etcd preallocates WAL segments); a size it extends
// is the logical size as well. Punching holes or zeroing ranges would change data behind the
// pages held here and is refused.
func (h *handle) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	if mode&^unix.FALLOC_FL_KEEP_SIZE != 0 {
		return syscall.EOPNOTSUPP
	}
	st.world.RLock()
	defer st.world.RUnlock()
	f := st.get(h.ino)
	if f != nil {
		defer f.mu.Unlock()
	}
	if errno := h.lf.Allocate(ctx, off, size, mode); errno != 0 {
		return errno
	}
	if f != nil && mode == 0 && int64(off+size) > f.size {
		f.size = int64(off + size)
	}
	return 0
}

// Flush (each close) and Release (the last close) persist nothing.
func (h *handle) Flush(ctx context.Context) syscall.Errno   { return h.lf.Flush(ctx) }
func (h *handle) Release(ctx context.Context) syscall.Errno { return h.lf.Release(ctx) }

// powerOff ends the world: with sync, every pending file is written first; without, dropped.
// It keeps the world lock, so that no operation reaches the backing afterwards.
func powerOff(sync bool) (bytes, files int64, failed error) {
	st.world.Lock()
	st.mu.Lock()
	defer st.mu.Unlock()
	for ino, f := range st.files {
		f.mu.Lock()
		bytes += f.dirtyBytes()
		if len(f.pages) > 0 || f.resized || f.shrunk {
			files++
		}
		if sync {
			if errno := f.persist(false); errno != 0 && failed == nil {
				failed = fmt.Errorf("writing inode %d: %v", ino, errno)
			}
		}
		f.gone = true
		unix.Close(f.fd)
		delete(st.files, ino)
		f.mu.Unlock()
	}
	return bytes, files, failed
}

// unmount lets go of the mount point: cleanly if nothing has it open, else detached (open
// files then see ENOTCONN once this process is gone).
func unmount(mnt string) {
	if err := unix.Unmount(mnt, 0); err != nil {
		if err := unix.Unmount(mnt, unix.MNT_DETACH); err != nil {
			fmt.Fprintf(os.Stderr, "powerloss-fs: unmounting %s: %v\n", mnt, err)
		}
	}
}

func main() {
	backing := flag.String("backing", "", "directory whose contents the mount shows (must exist)")
	mnt := flag.String("mount", "", "mount point (an existing empty directory)")
	debug := flag.Bool("debug", false, "log every FUSE request to stderr")
	flag.Parse()
	if *backing == "" || *mnt == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: powerloss-fs --backing DIR --mount DIR [--debug]")
		os.Exit(2)
	}
	root, err := fs.NewLoopbackRoot(*backing)
	if err != nil {
		fmt.Fprintf(os.Stderr, "powerloss-fs: backing directory %s: %v\n", *backing, err)
		os.Exit(1)
	}
	// Every change goes through this mount, so the kernel may cache entries and attributes
	// briefly; the sizes it keeps are the ones we report.
	timeout := time.Second
	server, err := fs.Mount(*mnt, &node{root.(*fs.LoopbackNode)}, &fs.Options{
		EntryTimeout: &timeout,
		AttrTimeout:  &timeout,
		MountOptions: fuse.MountOptions{
			DirectMount:          true,
			DirectMountStrict:    true, // there is no fusermount to fall back to
			AllowOther:           true,
			FsName:               "powerloss-fs",
			Name:                 "powerloss-fs",
			Debug:                *debug,
			DisabledCapabilities: fuse.CAP_PASSTHROUGH,
		},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "powerloss-fs: mounting %s on %s: %v\n", *backing, *mnt, err)
		os.Exit(1)
	}

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		sig := <-signals
		clean := sig != syscall.SIGUSR1
		bytes, files, err := powerOff(clean)
		if clean {
			fmt.Printf("{\"synced_bytes\": %d, \"synced_files\": %d}\n", bytes, files)
		} else {
			fmt.Printf("{\"dropped_bytes\": %d, \"dropped_files\": %d}\n", bytes, files)
		}
		unmount(*mnt)
		if err != nil {
			fmt.Fprintf(os.Stderr, "powerloss-fs: clean shutdown lost data: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}()

	fmt.Println("ready")
	server.Wait()
	// Unmounted from outside: keep what was written, as a clean power-off would.
	if _, _, err := powerOff(true); err != nil {
		fmt.Fprintf(os.Stderr, "powerloss-fs: after an unmount from outside: %v\n", err)
		os.Exit(1)
	}
}
