package weft_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/weft-go/weft"
)

// recordingNetwork fails every operation, naming it: enough to see which
// Network an operation went through.
type recordingNetwork struct{ name string }

func (n recordingNetwork) Listen(t *weft.Task, network, address string) (weft.NetListener, error) {
	return nil, errors.New(n.name + " listen " + network + " " + address)
}

func (n recordingNetwork) Dial(t *weft.Task, network, address string) (weft.NetConn, error) {
	return nil, errors.New(n.name + " dial " + network + " " + address)
}

func (n recordingNetwork) ListenPacket(t *weft.Task, network, address string) (weft.NetPacketConn, error) {
	return nil, errors.New(n.name + " listenpacket " + network + " " + address)
}

func TestWithNetworkRoutesListenDialAndListenPacket(t *testing.T) {
	_, err := weft.Run(func(t *weft.Task) (int, error) {
		check := func(err error, want string) error {
			if err == nil || err.Error() != want {
				return errors.New("got " + errString(err) + ", want " + want)
			}
			return nil
		}
		_, err := weft.Listen(t, "tcp", ":1")
		if err := check(err, "run listen tcp :1"); err != nil {
			return 0, err
		}
		_, err = weft.Dial(t, "tcp", "x:2")
		if err := check(err, "run dial tcp x:2"); err != nil {
			return 0, err
		}
		_, err = weft.ListenPacket(t, "udp", ":3")
		if err := check(err, "run listenpacket udp :3"); err != nil {
			return 0, err
		}
		// GoWithNetwork overrides it for f and the tasks f starts.
		_, err = weft.GoWithNetwork(t, recordingNetwork{"host"}, func(t *weft.Task) (int, error) {
			_, err := weft.Go(t, func(t *weft.Task) (int, error) {
				_, err := weft.Dial(t, "tcp", "y:4")
				return 0, check(err, "host dial tcp y:4")
			}).Await(t)
			return 0, err
		}).Await(t)
		return 0, err
	}, weft.WithNetwork(recordingNetwork{"run"}), weft.WithLoops(1))
	if err != nil {
		t.Fatal(err)
	}
}

func TestGoWithNetworkRejectsNil(t *testing.T) {
	tt := t
	_, err := weft.Run(func(t *weft.Task) (int, error) {
		for name, f := range map[string]func(){
			"nil network":  func() { weft.GoWithNetwork(t, nil, func(*weft.Task) (int, error) { return 0, nil }) },
			"nil function": func() { weft.GoWithNetwork[int](t, recordingNetwork{}, nil) },
		} {
			func() {
				defer func() {
					if r, _ := recover().(string); !strings.HasPrefix(r, "weft: GoWithNetwork") {
						tt.Errorf("%s: recovered %q, want a weft: panic", name, r)
					}
				}()
				f()
			}()
		}
		return 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
