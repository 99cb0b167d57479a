package framework

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/zktest"
)

// ZooKeeper's opcodes of the requests measured here.
const (
	opCreate          = 1
	opSetData         = 5
	opPing            = 11
	opMulti           = 14
	opCreateContainer = 19
	opCreateTTL       = 21
)

// frame is one request as it went over the wire: its opcode and the
// length its packet announced (what the server compares with
// jute.maxbuffer).
type frame struct {
	opcode int32
	length int
}

// recorder relays clients to a server and records every request frame
// they send, the connect request and pings left out.
type recorder struct {
	ln     net.Listener
	frames chan frame
	wg     sync.WaitGroup
}

func newRecorder(t *testing.T, server string) *recorder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	r := &recorder{ln: ln, frames: make(chan frame, 1024)}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			srv, err := net.Dial("tcp", server)
			if err != nil {
				client.Close()
				continue
			}
			r.wg.Add(2)
			go func() {
				defer r.wg.Done()
				_, _ = io.Copy(client, srv)
				client.Close()
			}()
			go func() {
				defer r.wg.Done()
				r.pump(client, srv)
				srv.Close()
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); r.wg.Wait() })
	return r
}

// pump forwards the client's frames one by one, recording each.
func (r *recorder) pump(client, srv net.Conn) {
	first := true
	head := make([]byte, 4)
	for {
		if _, err := io.ReadFull(client, head); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(head))
		body := make([]byte, n)
		if _, err := io.ReadFull(client, body); err != nil {
			return
		}
		if !first && n >= 8 {
			if op := int32(binary.BigEndian.Uint32(body[4:8])); op != opPing {
				r.frames <- frame{opcode: op, length: n}
			}
		}
		first = false
		if _, err := srv.Write(append(head, body...)); err != nil {
			return
		}
	}
}

// drain forgets the frames recorded so far: they were all recorded before
// the server could answer them.
func (r *recorder) drain() {
	for {
		select {
		case <-r.frames:
		default:
			return
		}
	}
}

// next returns the next frame recorded with opcode, skipping others.
func (r *recorder) next(t *testing.T, opcode int32) frame {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case f := <-r.frames:
			if f.opcode == opcode {
				return f
			}
		case <-timeout:
			t.Fatalf("no request with opcode %d went out", opcode)
		}
	}
}

// The size the client computes for a request is the length go-zookeeper
// writes for it, byte for byte, over a spread of requests: every create
// mode, ACL lists, nil and empty data, multi-byte characters in paths,
// a namespace, protected names, and multis of every op.
func TestRequestSizeIsWhatGoZookeeperWrites(t *testing.T) {
	cl := zktest.Standalone(t)
	rec := newRecorder(t, cl.DirectAddrs()[0])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	plain, err := Dial(ctx, []string{rec.ln.Addr().String()})
	require.NoError(t, err)
	defer plain.Close()
	spaced, err := Dial(ctx, []string{rec.ln.Addr().String()}, WithNamespace("app/größe"))
	require.NoError(t, err)
	defer spaced.Close()

	acls := [][]zk.ACL{
		nil, // the provider's
		{},
		zk.WorldACL(zk.PermRead),
		append(zk.WorldACL(zk.PermAll), zk.ACL{Perms: zk.PermRead, Scheme: "ip", ID: "127.0.0.1"},
			zk.ACL{Perms: zk.PermAdmin, Scheme: "ip", ID: "10.0.0.0/8"}),
	}
	datas := [][]byte{nil, {}, []byte("x"), []byte(strings.Repeat("ü", 300))}

	for ci, c := range []*Client{plain, spaced} {
		require.NoError(t, ignoreExists(c.Create(ctx, "/m", nil)))
		rec.drain() // the namespace's and /m's creates
		i := 0
		for _, mode := range []CreateMode{Persistent, Ephemeral, PersistentSequential, EphemeralSequential, Container, PersistentWithTTL, PersistentSequentialWithTTL} {
			for _, protected := range []bool{false, true} {
				for ai, acl := range acls {
					if ai == 1 {
						continue // the server refuses an empty ACL; the list's count is measured below, in multis
					}
					data := datas[i%len(datas)]
					i++
					path := "/m/nöde-" + strings.Repeat("p", i)
					opts := []CreateOption{WithMode(mode), WithACL(acl)}
					if mode.ttl() {
						opts = append(opts, WithTTL(time.Hour))
					}
					if protected {
						opts = append(opts, Protected())
					}
					o := applyCreateOptions(opts)
					want, err := c.measureCreate(path, data, &o)
					require.NoError(t, err)
					_, err = c.Create(ctx, path, data, opts...)
					require.NoError(t, err, "client %d, mode %d, protected %v, acl %d", ci, mode, protected, ai)
					op := int32(opCreate)
					switch {
					case mode == Container:
						op = opCreateContainer
					case mode.ttl():
						op = opCreateTTL
					}
					got := rec.next(t, op)
					assert.Equal(t, want, got.length, "client %d, mode %d, protected %v, acl %d, data %d bytes", ci, mode, protected, ai, len(data))
				}
			}
		}

		for _, data := range datas {
			_, err := c.Set(ctx, "/m", data, -1)
			require.NoError(t, err)
			assert.Equal(t, requestHeaderSize+setBodySize(len(c.ns.fix("/m")), data), rec.next(t, opSetData).length)
		}

		for ai, acl := range acls {
			data := datas[ai]
			ops := []any{
				&zk.CheckVersionRequest{Path: "/m", Version: -1},
				&zk.CreateRequest{Path: "/m/multi-é", Data: data, Acl: acl, Flags: zk.FlagEphemeral},
				&zk.SetDataRequest{Path: "/m", Data: data, Version: -1},
				&zk.DeleteRequest{Path: "/m/multi-é", Version: -1},
				&zk.CreateRequest{Path: "/m/seq-", Data: data, Flags: zk.FlagEphemeralSequential},
			}
			_, _, want, err := c.prepareMulti(ops)
			require.NoError(t, err)
			// An empty ACL fails the create, and the multi with it: the
			// request went out all the same.
			_, err = c.Multi(ctx, ops...)
			if ai == 1 {
				require.ErrorIs(t, err, zk.ErrInvalidACL)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, want, rec.next(t, opMulti).length, "acl %d", ai)
		}
		_, _, want, err := c.prepareMulti(nil)
		require.NoError(t, err)
		_, err = c.Multi(ctx)
		require.NoError(t, err)
		assert.Equal(t, want, rec.next(t, opMulti).length, "an empty multi")
	}
}

func ignoreExists(_ string, err error) error {
	if errors.Is(err, zk.ErrNodeExists) {
		return nil
	}
	return err
}
