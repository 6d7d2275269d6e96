//go:build unix

package weft_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/testcert"
	"golang.org/x/net/nettest"
)

var (
	tlsCertsOnce sync.Once
	tlsCerts     *testcert.Certs
)

// tlsConfigs returns a server and a client configuration that trust
// each other (a certificate for 127.0.0.1).
func tlsConfigs(testing.TB) (server, client *tls.Config) {
	tlsCertsOnce.Do(func() {
		c, err := testcert.New()
		if err != nil {
			panic(err)
		}
		tlsCerts = c
	})
	client = tlsCerts.ClientConfig()
	client.ServerName = "127.0.0.1"
	return tlsCerts.ServerConfig(), client
}

// handshaken makes mp's TLS ends run their handshakes (a Write of
// nothing, at both ends at once) before the suite has them: a handshake
// that a deadline interrupts fails for good, in crypto/tls as in TLSConn,
// and the suite's deadline cases set deadlines on fresh connections.
func handshaken(mp nettest.MakePipe) nettest.MakePipe {
	return func() (net.Conn, net.Conn, func(), error) {
		c1, c2, stop, err := mp()
		if err != nil {
			return nil, nil, nil, err
		}
		errs := make(chan error, 2)
		for _, c := range []net.Conn{c1, c2} {
			go func() {
				_, err := c.Write(nil)
				errs <- err
			}()
		}
		if err := errors.Join(<-errs, <-errs); err != nil {
			stop()
			return nil, nil, nil, err
		}
		return c1, c2, stop, nil
	}
}

// TLSConn through its GoConn, from plain goroutines, passes the
// conformance suite (nettest.TestConn): against weft's own TLSConn over
// TCP and Unix, and against crypto/tls over net's TCP both ways, on one
// and two loops. (Not crypto/tls over Unix sockets: its Close reports the
// close_notify it could not send to a peer that has closed, EPIPE there,
// which BasicIO takes for a failure, with or without weft.)
func TestTLSConnPassesNettest(t *testing.T) {
	srv, cli := tlsConfigs(t)
	wrap := func(wt *weft.Task, c *weft.Conn, server bool) net.Conn {
		if server {
			return weft.TLSServer(c, srv).GoConn()
		}
		return weft.TLSClient(c, cli).GoConn()
	}
	wrapNet := func(c net.Conn, server bool) net.Conn {
		if server {
			return tls.Server(c, srv)
		}
		return tls.Client(c, cli)
	}
	for _, network := range []string{"tcp", "unix"} {
		for _, peer := range peers {
			if network == "unix" && peer != "weft-weft" {
				continue
			}
			for _, loops := range loopCounts {
				t.Run(fmt.Sprintf("%s/%s/loops=%d", network, peer, loops), func(t *testing.T) {
					nettest.TestConn(t, handshaken(makePipe(t, network, peer, wrap, wrapNet, weft.WithLoops(loops))))
				})
			}
		}
	}
}

// crypto/tls's own Conn over a GoConn, in plain goroutines: a reader and
// a writer goroutine at each end, both ways at once, every byte in order,
// then a Close from a third goroutine that ends a Read waiting. (Not
// nettest: crypto/tls's writing side fails for good after a write
// deadline, over net's own TCPConn as well, so its deadline cases cannot
// pass; TLSConn's do, above.)
func TestCryptoTLSOverGoConnBothWays(t *testing.T) {
	srv, cli := tlsConfigs(t)
	for _, loops := range loopCounts {
		t.Run(fmt.Sprintf("loops=%d", loops), func(t *testing.T) {
			p, err := weftPipe(t, "tcp", "weft-weft", func(wt *weft.Task, c *weft.Conn, server bool) net.Conn {
				if server {
					return tls.Server(c.GoConn(), srv)
				}
				return tls.Client(c.GoConn(), cli)
			}, nil, weft.WithLoops(loops))
			if err != nil {
				t.Fatal(err)
			}
			defer p.stop()
			const total = 4 << 20
			var wg sync.WaitGroup
			for i, from := range []net.Conn{p.c1, p.c2} {
				to := []net.Conn{p.c1, p.c2}[1-i]
				wg.Add(2)
				go func() {
					defer wg.Done()
					buf := make([]byte, 50000)
					for sent := 0; sent < total; sent += len(buf) {
						for j := range buf {
							buf[j] = byte(sent + j)
						}
						if _, err := from.Write(buf[:min(len(buf), total-sent)]); err != nil {
							t.Error("Write:", err)
							return
						}
					}
				}()
				go func() {
					defer wg.Done()
					r := bufio.NewReader(to)
					for n := range total {
						b, err := r.ReadByte()
						if err != nil || b != byte(n) {
							t.Errorf("byte %d: %d, %v", n, b, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			read := make(chan error, 1)
			go func() {
				_, err := p.c1.Read(make([]byte, 8))
				read <- err
			}()
			time.Sleep(10 * time.Millisecond)
			go p.c1.Close()
			select {
			case err := <-read:
				if err == nil {
					t.Error("Read after Close: no error")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Read still waiting 10 s after Close")
			}
		})
	}
}

// A TLSConn between tasks: a reader and a writer task share each end,
// in both directions at once, and every byte arrives in order.
func TestTLSConnReaderAndWriterTasksBothWays(t *testing.T) {
	srv, cli := tlsConfigs(t)
	for _, loops := range loopCounts {
		t.Run(fmt.Sprintf("loops=%d", loops), func(t *testing.T) {
			run(t, func(wt *weft.Task) {
				ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
				defer ln.Close()
				c := mustDial(t, wt, "tcp", ln.Addr().String())
				s, err := ln.Accept(wt)
				if err != nil {
					t.Fatal(err)
				}
				ends := []*weft.TLSConn{weft.TLSClient(c, cli), weft.TLSServer(s, srv)}
				defer ends[0].Close()
				defer ends[1].Close()
				const total = 4 << 20
				var tasks []*weft.Promise[struct{}]
				for i, from := range ends {
					to := ends[1-i]
					tasks = append(tasks, spawn(wt, func(wt *weft.Task) {
						// Writes of odd sizes, a counting pattern.
						buf := make([]byte, 70000)
						sent := 0
						for sent < total {
							n := min(len(buf), total-sent, 1+(sent*7919)%len(buf))
							for j := range n {
								buf[j] = byte(sent + j)
							}
							if _, err := from.Write(wt, buf[:n]); err != nil {
								t.Error("Write:", err)
								return
							}
							sent += n
						}
						if err := from.CloseWrite(wt); err != nil {
							t.Error("CloseWrite:", err)
						}
					}), spawn(wt, func(wt *weft.Task) {
						buf := make([]byte, 5000)
						got := 0
						for {
							n, err := to.Read(wt, buf)
							for j := range n {
								if buf[j] != byte(got+j) {
									t.Errorf("byte %d is %d, want %d", got+j, buf[j], byte(got+j))
									return
								}
							}
							got += n
							if err == io.EOF {
								break
							}
							if err != nil {
								t.Error("Read:", err)
								return
							}
						}
						if got != total {
							t.Errorf("read %d bytes, want %d", got, total)
						}
					}))
				}
				for _, p := range tasks {
					p.Await(wt)
				}
				if st := ends[0].ConnectionState(); !st.HandshakeComplete || st.Version != tls.VersionTLS13 {
					t.Errorf("client's ConnectionState: complete %v, version %x", st.HandshakeComplete, st.Version)
				}
			}, weft.WithLoops(loops))
		})
	}
}

// tlsPeer is crypto/tls's server on a net connection, in plain
// goroutines, with what a test needs to forge records it sends: the raw
// connection under it (writes to it go straight to weft's end) and the
// handshake's secrets (its key log and the server's random).
type tlsPeer struct {
	raw    net.Conn
	tls    *tls.Conn
	keyLog bytes.Buffer
	first  []byte // the first bytes the server wrote: its ServerHello
	mu     sync.Mutex
}

// recorder keeps the first bytes written through it.
type recorder struct {
	net.Conn
	p *tlsPeer
}

func (r *recorder) Write(b []byte) (int, error) {
	r.p.mu.Lock()
	if len(r.p.first) < 1024 {
		r.p.first = append(r.p.first, b...)
	}
	r.p.mu.Unlock()
	return r.Conn.Write(b)
}

// listenTLSPeer listens for one connection and makes it a tlsPeer with
// cfg (session tickets off, so that the server sends nothing after its
// handshake); handshake delivers it once its handshake is done.
func listenTLSPeer(t *testing.T, cfg *tls.Config) (addr string, handshake chan *tlsPeer) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	handshake = make(chan *tlsPeer, 1)
	p := &tlsPeer{}
	cfg = cfg.Clone()
	cfg.KeyLogWriter = &p.keyLog
	cfg.SessionTicketsDisabled = true
	go func() {
		defer ln.Close()
		raw, err := ln.Accept()
		if err != nil {
			handshake <- nil
			return
		}
		p.raw = raw
		p.tls = tls.Server(&recorder{raw, p}, cfg)
		if err := p.tls.Handshake(); err != nil {
			t.Errorf("the peer's handshake: %v", err)
			raw.Close()
			handshake <- nil
			return
		}
		handshake <- p
	}()
	return ln.Addr().String(), handshake
}

// secret returns the key log's secret for label.
func (p *tlsPeer) secret(t *testing.T, label string) []byte {
	for _, line := range strings.Split(p.keyLog.String(), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == label {
			b, err := hex.DecodeString(f[2])
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
	t.Fatalf("no %s in the key log:\n%s", label, p.keyLog.String())
	return nil
}

// clientRandom returns the client's random from the key log.
func (p *tlsPeer) clientRandom(t *testing.T) []byte {
	f := strings.Fields(p.keyLog.String())
	b, err := hex.DecodeString(f[1])
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// record13 forges the server's record number seq under a TLS 1.3
// traffic secret (generation gen: 0 the handshake's, then one per
// KeyUpdate), with inner as its plaintext (content type last).
func (p *tlsPeer) record13(t *testing.T, gen int, seq uint64, inner []byte) []byte {
	st := p.tls.ConnectionState()
	var h func() hash.Hash
	keyLen, hashLen := 16, 32
	switch st.CipherSuite {
	case tls.TLS_AES_128_GCM_SHA256:
		h = sha256.New
	case tls.TLS_AES_256_GCM_SHA384:
		h, keyLen, hashLen = sha512.New384, 32, 48
	default:
		t.Skipf("cipher suite %s: the test forges AES-GCM records only", tls.CipherSuiteName(st.CipherSuite))
	}
	secret := p.secret(t, "SERVER_TRAFFIC_SECRET_0")
	label := func(secret []byte, l string, n int) []byte {
		full := "tls13 " + l
		info := []byte{byte(n >> 8), byte(n), byte(len(full))}
		info = append(info, full...)
		info = append(info, 0) // no context
		b, err := hkdf.Expand(h, secret, string(info), n)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for range gen {
		secret = label(secret, "traffic upd", hashLen)
	}
	key, iv := label(secret, "key", keyLen), label(secret, "iv", 12)
	for i := range 8 {
		iv[4+i] ^= byte(seq >> (56 - 8*i))
	}
	hdr := []byte{23, 3, 3, 0, 0}
	binary.BigEndian.PutUint16(hdr[3:], uint16(len(inner)+16))
	block, _ := aes.NewCipher(key)
	aead, _ := cipher.NewGCM(block)
	return aead.Seal(hdr, iv, inner, hdr)
}

// keyUpdateRecord forges the server's record number seq under its first
// TLS 1.3 application traffic secret: a KeyUpdate that requests the
// client's.
func (p *tlsPeer) keyUpdateRecord(t *testing.T, seq uint64) []byte {
	return p.record13(t, 0, seq, []byte{24, 0, 0, 1, 1, 22}) // KeyUpdate(update_requested), content type handshake
}

// helloRequestRecord forges the server's record number seq after a TLS
// 1.2 handshake with ECDHE-ECDSA-AES128-GCM-SHA256 (its Finished was
// number 0): a HelloRequest, asking the client to renegotiate.
func (p *tlsPeer) helloRequestRecord(t *testing.T, seq uint64) []byte {
	if st := p.tls.ConnectionState(); st.CipherSuite != tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 {
		t.Fatalf("cipher suite %s, want ECDHE-ECDSA-AES128-GCM-SHA256", tls.CipherSuiteName(st.CipherSuite))
	}
	master := p.secret(t, "CLIENT_RANDOM")
	p.mu.Lock()
	first := p.first
	p.mu.Unlock()
	// The ServerHello: record header (5), handshake header (4), version
	// (2), then the server's random.
	if len(first) < 43 || first[0] != 22 || first[5] != 2 {
		t.Fatalf("the server's first bytes are not a ServerHello: % x", first[:min(len(first), 16)])
	}
	seed := append(append([]byte(nil), first[11:43]...), p.clientRandom(t)...)
	kb := prf12(master, "key expansion", seed, 40)
	serverKey, serverIV := kb[16:32], kb[36:40]
	msg := []byte{0, 0, 0, 0} // HelloRequest
	var nonce [12]byte
	copy(nonce[:], serverIV)
	binary.BigEndian.PutUint64(nonce[4:], seq)
	var aad [13]byte
	binary.BigEndian.PutUint64(aad[:], seq)
	aad[8], aad[9], aad[10] = 22, 3, 3
	binary.BigEndian.PutUint16(aad[11:], uint16(len(msg)))
	block, _ := aes.NewCipher(serverKey)
	aead, _ := cipher.NewGCM(block)
	rec := []byte{22, 3, 3, 0, 0}
	binary.BigEndian.PutUint16(rec[3:], uint16(8+len(msg)+16))
	rec = append(rec, nonce[4:]...) // the explicit nonce
	return aead.Seal(rec, nonce[:], msg, aad[:])
}

// prf12 is TLS 1.2's PRF with SHA-256 (RFC 5246, section 5).
func prf12(secret []byte, label string, seed []byte, n int) []byte {
	ls := append([]byte(label), seed...)
	mac := hmac.New(sha256.New, secret)
	var out []byte
	a := ls
	for len(out) < n {
		mac.Reset()
		mac.Write(a)
		a = mac.Sum(nil)
		mac.Reset()
		mac.Write(a)
		mac.Write(ls)
		out = mac.Sum(out)
	}
	return out[:n]
}

// corruptRecord is an application data record that no key decrypts.
func corruptRecord(*testing.T, uint64) []byte {
	rec := []byte{23, 3, 3, 0, 40}
	for i := range 40 {
		rec = append(rec, byte(i*37))
	}
	return rec
}

// wedgeGuard panics if the test is still running after d: a loop blocked
// on a sync.Mutex would otherwise hang the test binary until its timeout.
func wedgeGuard(t *testing.T, d time.Duration) {
	tm := time.AfterFunc(d, func() {
		panic(fmt.Sprintf("%s: still running after %v: a loop is blocked", t.Name(), d))
	})
	t.Cleanup(func() { tm.Stop() })
}

// forgeCase is a record the peer forges, and what weft's reader makes of it.
type forgeCase struct {
	name    string
	version uint16
	forge   func(p *tlsPeer, t *testing.T, seq uint64) []byte
	readErr string // what the reader's Read returns ("": it goes on reading)
	alert   string // what the peer's Read reports of crypto/tls's alert ("": nothing: a warning it drops)
}

var forgeCases = []forgeCase{
	{"corrupt record", tls.VersionTLS13, func(_ *tlsPeer, t *testing.T, seq uint64) []byte { return corruptRecord(t, seq) }, "bad record MAC", "bad record MAC"},
	{"KeyUpdate", tls.VersionTLS13, (*tlsPeer).keyUpdateRecord, "", ""},
	{"renegotiation refused", tls.VersionTLS12, (*tlsPeer).helloRequestRecord, "no renegotiation", ""},
}

// firstSeq is the number of the peer's first record after its handshake.
func (fc forgeCase) firstSeq() uint64 {
	if fc.version == tls.VersionTLS12 {
		return 1 // its Finished was 0
	}
	return 0
}

// peerConfig is the peer's configuration for fc.
func (fc forgeCase) peerConfig(srv *tls.Config) *tls.Config {
	cfg := srv.Clone()
	cfg.MinVersion, cfg.MaxVersion = fc.version, fc.version
	cfg.CipherSuites = []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}
	return cfg
}

// blocking runs f off the loop (the peer's calls, which block).
func blocking[T any](wt *weft.Task, f func() (T, error)) (T, error) {
	return weft.Blocking(wt, func(context.Context) (T, error) { return f() })
}

// TLS shared by a reader task and a writer task never blocks the loop,
// whatever crypto/tls does on its own while the writer waits for room
// (its peer stopped reading): the reader meets a corrupt record (crypto/tls
// sends an alert), a TLS 1.3 KeyUpdate that asks for ours (crypto/tls
// answers), a TLS 1.2 HelloRequest (crypto/tls refuses renegotiation with
// an alert). Data the peer sends reaches the reader meanwhile; the reader
// returns crypto/tls's error or goes on reading; and a third task's Close
// ends the writer (and a reader still reading) with net.ErrClosed: on one
// loop and on two. Over a tls.Conn on LoopConn, the alert blocked the
// loop's goroutine for good on crypto/tls's output mutex, which the
// suspended writer held.
func TestTLSConnReaderAndStalledWriterNeverBlockTheLoop(t *testing.T) {
	srv, cli := tlsConfigs(t)
	for _, fc := range forgeCases {
		for _, loops := range loopCounts {
			t.Run(fmt.Sprintf("%s/loops=%d", fc.name, loops), func(t *testing.T) {
				wedgeGuard(t, 60*time.Second)
				addr, handshake := listenTLSPeer(t, fc.peerConfig(srv))
				run(t, func(wt *weft.Task) {
					c := mustDial(t, wt, "tcp", addr)
					tc := weft.TLSClient(c, cli)
					if err := tc.Handshake(wt); err != nil {
						t.Fatal(err)
					}
					peer, _ := blocking(wt, func() (*tlsPeer, error) { return <-handshake, nil })
					if peer == nil {
						t.Fatal("no peer")
					}
					defer peer.raw.Close()
					var wrote atomic.Int64 // the writer may run on another loop
					writer := weft.Go(wt, func(wt *weft.Task) (struct{}, error) {
						buf := make([]byte, 64<<10)
						for {
							n, err := tc.Write(wt, buf)
							wrote.Add(int64(n))
							if err != nil {
								return struct{}{}, err
							}
						}
					})
					got := weft.NewChan[string](4)
					reader := weft.Go(wt, func(wt *weft.Task) (struct{}, error) {
						buf := make([]byte, 1024)
						for {
							n, err := tc.Read(wt, buf)
							if n > 0 {
								got.Send(wt, string(buf[:n]))
							}
							if err != nil {
								return struct{}{}, err
							}
						}
					})
					// The writer fills the socket's buffers and waits.
					for last := int64(-1); wrote.Load() != last; {
						last = wrote.Load()
						if err := wt.Sleep(50 * time.Millisecond); err != nil {
							t.Fatal(err)
						}
					}
					// What the peer sends reaches the reader meanwhile.
					if _, err := blocking(wt, func() (int, error) { return peer.tls.Write([]byte("ping")) }); err != nil {
						t.Fatal(err)
					}
					msg, err := weft.Timeout(wt, 10*time.Second, got.Recv)
					if msg != "ping" || err != nil {
						t.Fatalf("the reader got %q, %v while the writer waited; want ping", msg, err)
					}
					rec := fc.forge(peer, t, fc.firstSeq()+1) // after ping
					if _, err := blocking(wt, func() (int, error) { return peer.raw.Write(rec) }); err != nil {
						t.Fatal(err)
					}
					if fc.readErr != "" {
						_, err := weft.Timeout(wt, 10*time.Second, reader.Await)
						if err == nil || !strings.Contains(err.Error(), fc.readErr) {
							t.Errorf("the reader's Read: %v, want an error about %q", err, fc.readErr)
						}
					} else {
						// Read and answered (into the buffer the waiting writer
						// sends): the reader reads on.
						if err := wt.Sleep(50 * time.Millisecond); err != nil {
							t.Fatal(err)
						}
						if reader.Settled() {
							_, err := reader.Await(wt)
							t.Errorf("the reader returned after a %s: %v", fc.name, err)
						}
					}
					// The loop runs other tasks: a third one closes.
					closer := weft.Go(wt, func(wt *weft.Task) (struct{}, error) { return struct{}{}, tc.Close() })
					if _, err := closer.Await(wt); err != nil {
						t.Errorf("Close: %v", err)
					}
					if _, err := writer.Await(wt); !errors.Is(err, net.ErrClosed) {
						t.Errorf("the writer after Close: %v, want net.ErrClosed", err)
					}
					if fc.readErr == "" {
						if _, err := reader.Await(wt); !errors.Is(err, net.ErrClosed) {
							t.Errorf("the reader after Close: %v, want net.ErrClosed", err)
						}
					}
				}, weft.WithLoops(loops))
			})
		}
	}
}

// What crypto/tls sends while it reads reaches the peer, in its place in
// the stream: the alert for a corrupt record (the peer's Read reports
// it; the warning that refuses a renegotiation is one crypto/tls drops),
// the answer to a KeyUpdate amid a long Write (the peer, which updates
// its keys on the answer, decrypts every byte that follows, in order).
func TestTLSConnSendsWhatCryptoTLSWritesWhileReading(t *testing.T) {
	srv, cli := tlsConfigs(t)
	for _, fc := range forgeCases {
		for _, loops := range loopCounts {
			t.Run(fmt.Sprintf("%s/loops=%d", fc.name, loops), func(t *testing.T) {
				wedgeGuard(t, 60*time.Second)
				addr, handshake := listenTLSPeer(t, fc.peerConfig(srv))
				run(t, func(wt *weft.Task) {
					c := mustDial(t, wt, "tcp", addr)
					tc := weft.TLSClient(c, cli)
					defer tc.Close()
					if err := tc.Handshake(wt); err != nil {
						t.Fatal(err)
					}
					peer, _ := blocking(wt, func() (*tlsPeer, error) { return <-handshake, nil })
					if peer == nil {
						t.Fatal("no peer")
					}
					defer peer.raw.Close()
					const total = 2 << 20
					// The peer reads everything, checks it, and reports the
					// count and the error it ended with.
					type result struct {
						n   int
						err error
					}
					peerDone := make(chan result, 1)
					go func() {
						r := bufio.NewReaderSize(peer.tls, 64<<10)
						n := 0
						for {
							b, err := r.ReadByte()
							if err != nil {
								peerDone <- result{n, err}
								return
							}
							if b != byte(n) {
								peerDone <- result{n, fmt.Errorf("byte %d is %d, want %d", n, b, byte(n))}
								return
							}
							n++
						}
					}()
					reader := weft.Go(wt, func(wt *weft.Task) (string, error) {
						b := make([]byte, 1024)
						n, err := tc.Read(wt, b)
						return string(b[:n]), err
					})
					writer := weft.Go(wt, func(wt *weft.Task) (struct{}, error) {
						buf := make([]byte, 32<<10)
						for sent := 0; sent < total; sent += len(buf) {
							for i := range buf {
								buf[i] = byte(sent + i)
							}
							if _, err := tc.Write(wt, buf); err != nil {
								return struct{}{}, err
							}
							if sent == total/2 {
								// Mid-stream: the peer forges its record.
								rec := fc.forge(peer, t, fc.firstSeq())
								if _, err := blocking(wt, func() (int, error) { return peer.raw.Write(rec) }); err != nil {
									return struct{}{}, err
								}
								if fc.readErr != "" {
									// The reader meets it and crypto/tls alerts
									// before this Write goes on.
									reader.Await(wt)
								}
							}
						}
						return struct{}{}, tc.CloseWrite(wt)
					})
					_, werr := writer.Await(wt)
					if fc.readErr != "" {
						// crypto/tls's error is sticky: the writer stopped. The
						// peer reads to the end.
						tc.Close()
					}
					res, _ := blocking(wt, func() (result, error) { return <-peerDone, nil })
					if fc.readErr == "" {
						if werr != nil {
							t.Errorf("the writer: %v", werr)
						}
						if res.n != total || res.err != io.EOF {
							t.Errorf("the peer read %d bytes of %d, then %v; want all, then EOF", res.n, total, res.err)
						}
						// The client took the server's new key: a record
						// under it (the next generation, its first) reads.
						rec := peer.record13(t, 1, 0, []byte("pong\x17"))
						if _, err := blocking(wt, func() (int, error) { return peer.raw.Write(rec) }); err != nil {
							t.Fatal(err)
						}
						if msg, err := reader.Await(wt); msg != "pong" || err != nil {
							t.Errorf("the reader after the KeyUpdate: %q, %v; want pong under the server's new key", msg, err)
						}
						return
					}
					_, rerr := reader.Await(wt)
					if rerr == nil || !strings.Contains(rerr.Error(), fc.readErr) {
						t.Errorf("the reader: %v, want an error about %q", rerr, fc.readErr)
					}
					if werr == nil || !strings.Contains(werr.Error(), fc.readErr) {
						t.Errorf("the writer: %v, want crypto/tls's sticky error about %q", werr, fc.readErr)
					}
					if res.n < total/2 {
						t.Errorf("the peer read %d bytes, fewer than the %d written before the forged record", res.n, total/2)
					}
					switch {
					case res.err != nil && strings.HasPrefix(res.err.Error(), "byte "):
						t.Errorf("the peer: %v", res.err)
					case fc.alert != "" && (res.err == nil || !strings.Contains(res.err.Error(), fc.alert)):
						t.Errorf("the peer read %d bytes, then %v; want the alert %q", res.n, res.err, fc.alert)
					case fc.alert == "" && res.err != io.EOF && !errors.Is(res.err, io.ErrUnexpectedEOF):
						t.Errorf("the peer read %d bytes, then %v; want the end of the stream", res.n, res.err)
					}
				}, weft.WithLoops(loops))
			})
		}
	}
}

// A tls.Conn over LoopConn that a reader task and a writer task share is
// the pattern that can block a loop (a task suspended inside crypto/tls
// holds its mutex); LoopConn says so with a "weft:" panic as soon as both
// are inside crypto/tls over it, instead of working until the first alert
// and then blocking the loop for good.
func TestLoopConnPanicsWhenTwoTasksShareATLSConn(t *testing.T) {
	srv, cli := tlsConfigs(t)
	wedgeGuard(t, 60*time.Second)
	addr, handshake := listenTLSPeer(t, forgeCases[0].peerConfig(srv))
	var p any
	func() {
		defer func() { p = recover() }()
		weft.Run(func(wt *weft.Task) (struct{}, error) {
			c := mustDial(t, wt, "tcp", addr)
			defer c.Close() // as the misuse unwinds main: the reader wakes
			tc := tls.Client(c.LoopConn(), cli)
			if err := tc.Handshake(); err != nil {
				t.Fatal(err)
			}
			peer, _ := blocking(wt, func() (*tlsPeer, error) { return <-handshake, nil })
			if peer == nil {
				t.Fatal("no peer")
			}
			defer peer.raw.Close()
			weft.Go(wt, func(wt *weft.Task) (int, error) { return tc.Read(make([]byte, 1024)) })
			writer := weft.Go(wt, func(wt *weft.Task) (struct{}, error) {
				buf := make([]byte, 64<<10)
				for {
					if _, err := tc.Write(buf); err != nil {
						return struct{}{}, err
					}
				}
			})
			_, err := writer.Await(wt)
			return struct{}{}, err
		})
	}()
	msg, _ := p.(string)
	if pe, ok := p.(error); ok {
		msg = pe.Error()
	}
	if !strings.Contains(msg, "weft: two tasks are inside one crypto/tls Conn over a LoopConn") {
		t.Fatalf("Run: %v; want the LoopConn's misuse panic", p)
	}
}

// Close from another task while the handshake waits for a peer that
// never answers ends the handshake at once, with net.ErrClosed, and
// every later call fails the same way.
func TestTLSConnCloseDuringTheHandshake(t *testing.T) {
	_, cli := tlsConfigs(t)
	for _, loops := range loopCounts {
		t.Run(fmt.Sprintf("loops=%d", loops), func(t *testing.T) {
			run(t, func(wt *weft.Task) {
				ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
				defer ln.Close()
				c := mustDial(t, wt, "tcp", ln.Addr().String())
				s, err := ln.Accept(wt)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close() // a peer that says nothing
				tc := weft.TLSClient(c, cli)
				hs := weft.Go(wt, func(wt *weft.Task) (struct{}, error) { return struct{}{}, tc.Handshake(wt) })
				writer := weft.Go(wt, func(wt *weft.Task) (int, error) { return tc.Write(wt, []byte("x")) })
				if err := wt.Sleep(20 * time.Millisecond); err != nil {
					t.Fatal(err)
				}
				if err := tc.Close(); err != nil {
					t.Fatal(err)
				}
				if _, err := weft.Timeout(wt, 10*time.Second, hs.Await); !errors.Is(err, net.ErrClosed) {
					t.Errorf("Handshake after Close: %v, want net.ErrClosed", err)
				}
				if _, err := weft.Timeout(wt, 10*time.Second, writer.Await); err == nil {
					t.Error("a Write waiting for the handshake returned no error after Close")
				}
				if _, err := tc.Read(wt, make([]byte, 8)); err == nil {
					t.Error("Read after Close: no error")
				}
				if err := tc.Close(); !errors.Is(err, net.ErrClosed) {
					t.Errorf("a second Close: %v, want net.ErrClosed", err)
				}
			}, weft.WithLoops(loops))
		})
	}
}

// A Read past its deadline, or cancelled, returns and leaves the
// connection as it was: the data that comes later is read whole. A Write
// past its deadline while its records were on their way returns what it
// encrypted; those records go out with the next Write, and the peer reads
// one whole stream.
func TestTLSConnDeadlinesAndCancellation(t *testing.T) {
	srv, cli := tlsConfigs(t)
	big := make([]byte, 16<<20)
	for i := range big {
		big[i] = byte(i)
	}
	for _, loops := range loopCounts {
		t.Run(fmt.Sprintf("loops=%d", loops), func(t *testing.T) {
			run(t, func(wt *weft.Task) {
				ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
				defer ln.Close()
				c := mustDial(t, wt, "tcp", ln.Addr().String())
				s, err := ln.Accept(wt)
				if err != nil {
					t.Fatal(err)
				}
				client, server := weft.TLSClient(c, cli), weft.TLSServer(s, srv)
				defer client.Close()
				defer server.Close()
				hs := weft.Go(wt, func(wt *weft.Task) (struct{}, error) { return struct{}{}, server.Handshake(wt) })
				if err := client.Handshake(wt); err != nil {
					t.Fatal(err)
				}
				if _, err := hs.Await(wt); err != nil {
					t.Fatal(err)
				}
				buf := make([]byte, 64)
				client.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
				if _, err := client.Read(wt, buf); !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Errorf("Read past the deadline: %v, want os.ErrDeadlineExceeded", err)
				}
				client.SetReadDeadline(time.Time{})
				if _, err := weft.Timeout(wt, 10*time.Millisecond, func(wt *weft.Task) (int, error) { return client.Read(wt, buf) }); !errors.Is(err, weft.ErrTimeout) {
					t.Errorf("Read under a Timeout: %v, want ErrTimeout", err)
				}
				if _, err := server.Write(wt, []byte("still here")); err != nil {
					t.Fatal(err)
				}
				if n, err := client.Read(wt, buf); string(buf[:n]) != "still here" || err != nil {
					t.Errorf("Read after the deadline and the cancellation: %q, %v", buf[:n], err)
				}
				// The client reads nothing for now: a Write past its deadline.
				server.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
				n, err := server.Write(wt, big)
				if !errors.Is(err, os.ErrDeadlineExceeded) || n == len(big) {
					t.Fatalf("Write past the deadline: %d of %d bytes, %v; want os.ErrDeadlineExceeded", n, len(big), err)
				}
				server.SetWriteDeadline(time.Time{})
				tail := make([]byte, 100000)
				for i := range tail {
					tail[i] = byte(n + i)
				}
				reader := weft.Go(wt, func(wt *weft.Task) (int, error) {
					buf := make([]byte, 32<<10)
					got := 0
					for {
						k, err := client.Read(wt, buf)
						for i := range k {
							if buf[i] != byte(got+i) {
								return got + i, fmt.Errorf("byte %d is %d, want %d", got+i, buf[i], byte(got+i))
							}
						}
						got += k
						if err != nil {
							return got, err
						}
					}
				})
				if _, err := server.Write(wt, tail); err != nil {
					t.Errorf("Write after a Write cut by its deadline: %v", err)
				}
				if err := server.CloseWrite(wt); err != nil {
					t.Error(err)
				}
				if got, err := reader.Await(wt); got != n+len(tail) || err != io.EOF {
					t.Errorf("the client read %d bytes, then %v; want %d (what the cut Write encrypted, then the next), then EOF", got, err, n+len(tail))
				}
			}, weft.WithLoops(loops))
		})
	}
}

// A client Config that asks for renegotiation, which TLSConn does not
// do, is an error at the handshake, not a surprise later.
func TestTLSConnRefusesAConfigWithRenegotiation(t *testing.T) {
	_, cli := tlsConfigs(t)
	cli.Renegotiation = tls.RenegotiateOnceAsClient
	run(t, func(wt *weft.Task) {
		ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
		defer ln.Close()
		c := mustDial(t, wt, "tcp", ln.Addr().String())
		tc := weft.TLSClient(c, cli)
		defer tc.Close()
		err := tc.Handshake(wt)
		if err == nil || !strings.Contains(err.Error(), "renegotiation") {
			t.Errorf("Handshake: %v, want an error about renegotiation", err)
		}
		if _, err2 := tc.Write(wt, []byte("x")); err2 == nil || err2.Error() != err.Error() {
			t.Errorf("Write after it: %v, want the handshake's error", err2)
		}
	})
}

// tlsSink starts crypto/tls's server on net (a goroutine per connection)
// that either echoes what it reads or discards it, and returns its
// address and a stop function.
func tlsSink(b testing.TB, srv *tls.Config, echo bool) (string, func()) {
	return serveNet(b, tls.NewListener(netListen(b), srv), func(c net.Conn) {
		if echo {
			io.Copy(c, c)
		} else {
			io.Copy(io.Discard, c)
		}
	})
}

// runB is run for benchmarks (without the watchdog, whose reports of a
// loaded machine would cut the result lines).
func runB(b *testing.B, main func(t *weft.Task), opts ...weft.Option) {
	b.Helper()
	_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
		main(wt)
		return struct{}{}, nil
	}, append([]weft.Option{weft.WithWatchdog(0)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
}

// tlsClientKinds are the TLS clients the benchmarks compare, each
// running f, from its task or goroutine, with a connection to addr that
// speaks TLS: crypto/tls over net's TCPConn, in a goroutine; TLSConn, in
// a task (through NetConn); crypto/tls over LoopConn, in one task (as
// before TLSConn: safe for one task only).
var tlsClientKinds = []struct {
	name string
	run  func(b *testing.B, addr string, cli *tls.Config, f func(c net.Conn))
}{
	{"net+crypto-tls", func(b *testing.B, addr string, cli *tls.Config, f func(c net.Conn)) {
		c, err := tls.Dial("tcp", addr, cli)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		f(c)
	}},
	{"TLSConn", func(b *testing.B, addr string, cli *tls.Config, f func(c net.Conn)) {
		runB(b, func(wt *weft.Task) {
			c, err := weft.Dial(wt, "tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			tc := weft.TLSClient(c, cli)
			defer tc.Close()
			f(tc.NetConn(wt))
		})
	}},
	{"LoopConn+crypto-tls", func(b *testing.B, addr string, cli *tls.Config, f func(c net.Conn)) {
		runB(b, func(wt *weft.Task) {
			c, err := weft.Dial(wt, "tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			tc := tls.Client(c.LoopConn(), cli)
			defer tc.Close()
			f(tc)
		})
	}},
}

// Writing over TLS, 16 KiB a Write, to crypto/tls's server on net, which
// discards what it reads.
func BenchmarkTLSThroughput(b *testing.B) {
	srv, cli := tlsConfigs(nil)
	addr, stop := tlsSink(b, srv, false)
	defer stop()
	for _, k := range tlsClientKinds {
		b.Run(k.name, func(b *testing.B) {
			k.run(b, addr, cli, func(c net.Conn) {
				buf := make([]byte, 16<<10)
				if _, err := c.Write(buf); err != nil { // the handshake
					b.Fatal(err)
				}
				b.SetBytes(int64(len(buf)))
				b.ResetTimer()
				for range b.N {
					if _, err := c.Write(buf); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// A round trip of 64 bytes over TLS to crypto/tls's echo server on net.
func BenchmarkTLSRoundTrip(b *testing.B) {
	srv, cli := tlsConfigs(nil)
	addr, stop := tlsSink(b, srv, true)
	defer stop()
	for _, k := range tlsClientKinds {
		b.Run(k.name, func(b *testing.B) {
			k.run(b, addr, cli, func(c net.Conn) {
				buf := make([]byte, 64)
				if _, err := c.Write(buf); err != nil { // the handshake
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, buf); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				for range b.N {
					if _, err := c.Write(buf); err != nil {
						b.Fatal(err)
					}
					if _, err := io.ReadFull(c, buf); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// A TLS connection whose reader and writer are two tasks: TLSConn lets
// them share it (a tls.Conn over LoopConn could block the loop).
func ExampleTLSClient() {
	certs, _ := testcert.New() // an authority and a certificate for 127.0.0.1
	weft.Run(func(t *weft.Task) (struct{}, error) {
		ln, _ := weft.Listen(t, "tcp", "127.0.0.1:0")
		defer ln.Close()
		weft.Go(t, func(t *weft.Task) (struct{}, error) { // an echo server
			c, err := ln.Accept(t)
			if err != nil {
				return struct{}{}, err
			}
			tc := weft.TLSServer(c, certs.ServerConfig())
			defer tc.Close()
			_, err = io.Copy(tc.NetConn(t), tc.NetConn(t))
			return struct{}{}, err
		})
		c, _ := weft.Dial(t, "tcp", ln.Addr().String())
		cfg := certs.ClientConfig()
		cfg.ServerName = "127.0.0.1"
		tc := weft.TLSClient(c, cfg)
		defer tc.Close()
		writer := weft.Go(t, func(t *weft.Task) (struct{}, error) {
			for _, line := range []string{"one\n", "two\n", "three\n"} {
				if _, err := tc.Write(t, []byte(line)); err != nil {
					return struct{}{}, err
				}
			}
			return struct{}{}, tc.CloseWrite(t)
		})
		reader := weft.Go(t, func(t *weft.Task) (string, error) {
			b, err := io.ReadAll(tc.NetConn(t))
			return string(b), err
		})
		writer.Await(t)
		echoed, err := reader.Await(t)
		fmt.Printf("%q %v\n", echoed, err)
		return struct{}{}, nil
	})
	// Output: "one\ntwo\nthree\n" <nil>
}
