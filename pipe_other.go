//go:build !unix

package weft

import "os"

// Pipe returns a connected pair of Files: what is written to w can be read
// from r. On this system they are os.Pipe files served off the loop. Pipe
// takes no task and does not suspend.
func Pipe() (r, w *File, err error) {
	rf, wf, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	return &File{fd: -1, os: rf}, &File{fd: -1, os: wf}, nil
}

func bindFile(t *Task, f *File) (fileImpl, error) {
	return newPortableFile(f.os), nil
}

func closeFD(int) error { return nil }
