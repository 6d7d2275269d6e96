package main

// Raft's leader election (Ongaro and Ousterhout, "In Search of an
// Understandable Consensus Algorithm", section 5.2), on datagrams: each
// node is a follower until its election timeout passes without a
// heartbeat, then a candidate that votes for itself and asks the others
// for their votes; a majority makes it leader for its term, and it sends
// heartbeats. A node that sees a higher term adopts it and becomes a
// follower. The one property checked is election safety: at most one
// leader per term. It holds because a node grants at most one vote per
// term; the planted bug (Config.DoubleVote) forgets that.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/simnet"
)

// Config is a cluster's setup.
type Config struct {
	Nodes      int           // 3 unless set
	Duration   time.Duration // virtual time the cluster runs (2 s unless set)
	Faults     bool          // a nemesis partitions nodes apart, and links lose 10% of datagrams
	DoubleVote bool          // the planted bug: a node grants a vote to every candidate of its current term
	Stats      *Stats        // if not nil, filled as the cluster runs

	// Inject, if not nil, is given the nemesis's faults instead of
	// injecting them itself: a weftest.Plan's Add, so that a failure's
	// faults can be shrunk. at counts from the call.
	Inject func(t *weft.Task, at time.Duration, name string, do func())

	// Broke, if not nil, is called with a broken invariant where it is
	// found (weftest.Mark, for the report) and returns the error.
	Broke func(t *weft.Task, err error) error
}

// Stats say what happened in a run.
type Stats struct {
	Elections int // candidacies
	Leaders   int // terms someone won
}

const port = 7000

var (
	heartbeatEvery = 50 * time.Millisecond
	electionMin    = 150 * time.Millisecond
	electionSpread = 150 * time.Millisecond
)

// ErrTwoLeaders is the broken invariant.
var ErrTwoLeaders = errors.New("two leaders in one term")

// leaders records, per term, who became leader: the safety check.
type leaders map[int]string

func (l leaders) elected(term int, name string, st *Stats) error {
	prev, ok := l[term]
	if ok && prev != name {
		return fmt.Errorf("%w: %s and %s both won term %d", ErrTwoLeaders, prev, name, term)
	}
	if !ok {
		l[term] = name
		if st != nil {
			st.Leaders++
		}
	}
	return nil
}

// Cluster runs cfg's nodes on n (hosts "n0", "n1", ...) for cfg.Duration
// of the Run's time and returns the first broken invariant, or nil. It
// suspends for the whole run.
func Cluster(t *weft.Task, n *simnet.Net, cfg Config) error {
	if cfg.Nodes == 0 {
		cfg.Nodes = 3
	}
	if cfg.Duration == 0 {
		cfg.Duration = 2 * time.Second
	}
	names := make([]string, cfg.Nodes)
	for i := range names {
		names[i] = fmt.Sprint("n", i)
	}
	if cfg.Faults {
		for i := range names {
			for j := i + 1; j < len(names); j++ {
				n.SetLink(names[i], names[j], simnet.Link{Latency: 5 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.1})
			}
		}
	}
	won := leaders{}
	return weft.Group(t, func(g *weft.TaskGroup) error {
		for _, name := range names {
			nd := &node{name: name, peers: names, cfg: cfg, won: won}
			g.GoDaemon(func(t *weft.Task) error {
				_, err := weft.GoWithNetwork(t, n.Host(name), func(t *weft.Task) (int, error) {
					return 0, nd.run(t)
				}).Await(t)
				return err
			})
		}
		end := t.Now().Add(cfg.Duration)
		inject := cfg.Inject
		if inject == nil {
			inject = func(t *weft.Task, at time.Duration, name string, do func()) {
				weft.Go(t, func(t *weft.Task) (int, error) {
					if err := t.Sleep(at); err != nil {
						return 0, err
					}
					do()
					return 0, nil
				})
			}
		}
		// The nemesis: now and then cut one node off for a while, then heal.
		for at := time.Duration(0); cfg.Faults; {
			at += time.Duration(100+t.Rand()%300) * time.Millisecond
			heal := at + time.Duration(100+t.Rand()%400)*time.Millisecond
			if heal >= cfg.Duration {
				break
			}
			victim := names[t.Rand()%uint64(len(names))]
			inject(t, at, fmt.Sprintf("isolate %s at %v", victim, at), func() {
				for _, other := range names {
					n.Partition(victim, other)
				}
			})
			inject(t, heal, fmt.Sprintf("heal all at %v", heal), n.HealAll)
			at = heal
		}
		return t.Sleep(end.Sub(t.Now()))
	})
}

type node struct {
	name  string
	peers []string
	cfg   Config
	won   leaders

	term     int
	votedFor string // in term; "" for none
	leader   bool
	votes    map[string]bool
}

// run is one node: it receives on its port and acts on messages and
// timeouts until cancelled.
func (nd *node) run(t *weft.Task) error {
	pc, err := weft.ListenPacket(t, "udp", fmt.Sprint(":", port))
	if err != nil {
		return err
	}
	defer pc.Close()
	inbox := weft.NewChan[string](64)
	weft.Go(t, func(t *weft.Task) (int, error) {
		buf := make([]byte, 256)
		for {
			k, _, err := pc.ReadFrom(t, buf)
			if err != nil {
				inbox.Close()
				return 0, nil
			}
			inbox.TrySend(string(buf[:k])) // a full inbox drops, as a socket buffer does
		}
	})
	timeout := nd.electionTimeout(t)
	for {
		wait := timeout
		if nd.leader {
			wait = heartbeatEvery
		}
		var msg string
		i, err := weft.Select(t, weft.RecvCase(inbox, &msg), weft.AfterCase(wait))
		if err != nil {
			if i == 0 || errors.Is(err, context.Canceled) {
				return nil // the inbox closed, or the cluster is done
			}
			return err
		}
		if i == 1 {
			if nd.leader {
				nd.broadcast(t, pc, fmt.Sprintf("beat %d %s", nd.term, nd.name))
			} else {
				nd.startElection(t, pc)
				timeout = nd.electionTimeout(t)
			}
			continue
		}
		reset, err := nd.handle(t, pc, msg)
		if err != nil {
			return err
		}
		if reset {
			timeout = nd.electionTimeout(t)
		}
	}
}

func (nd *node) electionTimeout(t *weft.Task) time.Duration {
	return electionMin + time.Duration(t.Rand()%uint64(electionSpread))
}

func (nd *node) startElection(t *weft.Task, pc *weft.PacketConn) {
	nd.term++
	if st := nd.cfg.Stats; st != nil {
		st.Elections++
	}
	nd.votedFor = nd.name
	nd.votes = map[string]bool{nd.name: true}
	nd.broadcast(t, pc, fmt.Sprintf("ask %d %s", nd.term, nd.name))
}

// handle acts on one message; it reports whether the election timer
// restarts (a heartbeat came, or a vote was granted).
func (nd *node) handle(t *weft.Task, pc *weft.PacketConn, msg string) (bool, error) {
	var kind, from string
	var term int
	var granted bool
	f := strings.Fields(msg)
	if len(f) < 3 {
		return false, fmt.Errorf("%s: bad message %q", nd.name, msg)
	}
	kind, from = f[0], f[2]
	fmt.Sscan(f[1], &term)
	if len(f) > 3 {
		granted = f[3] == "yes"
	}
	if term > nd.term {
		nd.term, nd.votedFor, nd.leader, nd.votes = term, "", false, nil
	}
	switch kind {
	case "ask":
		grant := term == nd.term && (nd.votedFor == "" || nd.votedFor == from)
		if nd.cfg.DoubleVote {
			grant = term == nd.term && !nd.leader // the bug: votedFor is not checked
		}
		if grant {
			nd.votedFor = from
		}
		answer := "no"
		if grant {
			answer = "yes"
		}
		nd.send(t, pc, from, fmt.Sprintf("vote %d %s %s", nd.term, nd.name, answer))
		return grant, nil
	case "vote":
		if term != nd.term || nd.leader || nd.votes == nil || !granted {
			return false, nil
		}
		nd.votes[from] = true
		if 2*len(nd.votes) > len(nd.peers) {
			nd.leader = true
			if err := nd.won.elected(nd.term, nd.name, nd.cfg.Stats); err != nil {
				if nd.cfg.Broke != nil {
					err = nd.cfg.Broke(t, err)
				}
				return false, err
			}
			nd.broadcast(t, pc, fmt.Sprintf("beat %d %s", nd.term, nd.name))
		}
		return false, nil
	case "beat":
		if term == nd.term && from != nd.name {
			nd.leader = false
			return true, nil
		}
		return false, nil
	}
	return false, fmt.Errorf("%s: unknown message %q", nd.name, msg)
}

func (nd *node) send(t *weft.Task, pc *weft.PacketConn, to, msg string) {
	_, _ = pc.WriteTo(t, []byte(msg), simnet.Addr{Net: "udp", Host: to, Port: port})
}

func (nd *node) broadcast(t *weft.Task, pc *weft.PacketConn, msg string) {
	for _, p := range nd.peers {
		if p != nd.name {
			nd.send(t, pc, p, msg)
		}
	}
}
