package weft_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

func TestContextCarriesRunsValuesToEveryTask(t *testing.T) {
	ctx := context.WithValue(context.Background(), ctxKey("user"), "ada")
	run(t, func(wt *weft.Task) {
		p := weft.Go(wt, func(wt *weft.Task) (any, error) {
			q := weft.Go(wt, func(wt *weft.Task) (any, error) {
				return wt.Context().Value(ctxKey("user")), nil
			})
			return q.Await(wt)
		})
		if v, _ := p.Await(wt); v != "ada" {
			t.Errorf("grandchild sees %v", v)
		}
	}, weft.WithContext(ctx))
}

func TestChildContextOutlivesItsParent(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var childCtx context.Context
		parent := weft.Go(wt, func(wt *weft.Task) (*weft.Promise[int], error) {
			return weft.Go(wt, func(wt *weft.Task) (int, error) {
				childCtx = wt.Context()
				return 0, wt.Sleep(10 * time.Millisecond)
			}), nil
		})
		child, _ := parent.Await(wt) // the parent has returned
		if childCtx.Err() != nil {
			t.Fatal("child's context done because its parent returned")
		}
		child.Await(wt)
		if childCtx.Err() == nil {
			t.Fatal("child's context not done after the child finished")
		}
	})
}

func TestContextErrIsDeadlineExceededAfterTimeout(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var ctx context.Context
		weft.Timeout(wt, time.Second, func(wt *weft.Task) (int, error) {
			ctx = wt.Context()
			return 0, wt.Sleep(time.Hour)
		})
		if ctx.Err() != context.DeadlineExceeded {
			t.Fatalf("Context().Err() = %v", ctx.Err())
		}
		if !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
			t.Fatalf("context.Cause = %v", context.Cause(ctx))
		}
	}, weft.WithVirtualTime(epoch))
}

type ctxKey string
