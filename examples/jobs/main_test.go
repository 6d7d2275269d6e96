package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"go.uber.org/goleak"
)

// The tests count the jobs running at once in plain variables shared by
// the jobs' tasks: they run on one loop, whatever WEFT_LOOPS says.
func TestMain(m *testing.M) {
	os.Setenv("WEFT_LOOPS", "1")
	goleak.VerifyTestMain(m)
}

var vt = weft.WithVirtualTime(time.Unix(0, 0))

func TestJobsRunAtMostLimitAtOnceAndResultsComeInOrder(t *testing.T) {
	running, most := 0, 0
	jobs := []string{"30", "10", "20", "10", "5"}
	got, err := weft.Run(func(t *weft.Task) ([]string, error) {
		return runJobs(t, jobs, 2, func(t *weft.Task, job string) (string, error) {
			running++
			most = max(most, running)
			defer func() { running-- }()
			var ms int
			fmt.Sscan(job, &ms)
			if err := t.Sleep(time.Duration(ms) * time.Millisecond); err != nil {
				return "", err
			}
			return "done " + job, nil
		})
	}, vt)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"done 30", "done 10", "done 20", "done 10", "done 5"}
	if !slices.Equal(got, want) || most != 2 {
		t.Fatalf("results %v (at most %d at once), want %v, 2", got, most, want)
	}
}

func TestFirstFailingJobCancelsTheRest(t *testing.T) {
	errBroken := errors.New("broken")
	var finished, cancelled []string
	_, err := weft.Run(func(t *weft.Task) ([]string, error) {
		return runJobs(t, []string{"slow", "fails", "waiting"}, 2, func(t *weft.Task, job string) (string, error) {
			if job == "fails" {
				t.Sleep(time.Millisecond)
				return "", errBroken
			}
			if err := t.Sleep(time.Second); err != nil {
				cancelled = append(cancelled, job)
				return "", err
			}
			finished = append(finished, job)
			return job, nil
		})
	}, vt)
	if !errors.Is(err, errBroken) {
		t.Fatalf("runJobs = %v, want the failure", err)
	}
	if len(finished) != 0 || !slices.Contains(cancelled, "slow") {
		t.Fatalf("finished %v, cancelled %v: the failure should cancel the rest", finished, cancelled)
	}
}

func TestChecksumJobs(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	os.WriteFile(a, []byte("abc"), 0o600)
	sums, err := weft.Run(func(t *weft.Task) ([]string, error) {
		return runJobs(t, []string{a, a}, 4, checksum)
	})
	const abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if err != nil || !slices.Equal(sums, []string{abc, abc}) {
		t.Fatalf("sums %v, %v", sums, err)
	}
	_, err = weft.Run(func(t *weft.Task) ([]string, error) {
		return runJobs(t, []string{a, filepath.Join(dir, "missing")}, 4, checksum)
	})
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}
