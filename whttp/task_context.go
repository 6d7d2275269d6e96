package whttp

import (
	"context"

	"github.com/weft-go/weft"
)

// TaskOfContext returns the task serving the request whose context ctx
// is or derives from (as TaskOf does for the request): for handlers such
// as connectrpc.com/connect's, which get a context rather than the
// request. It returns nil for other contexts. It does not suspend.
func TaskOfContext(ctx context.Context) *weft.Task {
	t, _ := ctx.Value(taskKey{}).(*weft.Task)
	return t
}
