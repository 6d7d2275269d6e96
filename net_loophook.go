package weft

import "github.com/weft-go/weft/internal/loophook"

func init() {
	loophook.Current = func() any {
		if t := currentTask(); t != nil {
			return t
		}
		return nil
	}
}
