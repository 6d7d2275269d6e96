package main

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestTwinKeepsOrderAndStopsAtTheFirstFailure(t *testing.T) {
	got, err := runJobs(context.Background(), []string{"a", "b", "c"}, 2, func(ctx context.Context, j string) (string, error) {
		return j + j, nil
	})
	if err != nil || !slices.Equal(got, []string{"aa", "bb", "cc"}) {
		t.Fatalf("%v, %v", got, err)
	}
	errBroken := errors.New("broken")
	_, err = runJobs(context.Background(), []string{"slow", "fails"}, 2, func(ctx context.Context, j string) (string, error) {
		if j == "fails" {
			return "", errBroken
		}
		select {
		case <-time.After(10 * time.Second):
			return j, nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	if !errors.Is(err, errBroken) {
		t.Fatalf("err = %v", err)
	}
}
