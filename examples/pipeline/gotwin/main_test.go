package main

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestTwinSumsAndStops(t *testing.T) {
	r := pipeline(context.Background(), 100, 4, time.Microsecond, time.Hour, func(int64) {})
	if r.done != 100 || r.sum != 338350 || r.interrupted {
		t.Fatalf("%+v", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	r = pipeline(ctx, 1_000_000, 4, time.Millisecond, time.Hour, func(int64) {})
	if !r.interrupted || r.done >= 1_000_000 {
		t.Fatalf("%+v", r)
	}
}
