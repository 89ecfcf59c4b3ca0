package gradwire

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func newRuntime(t *testing.T, text string) *Runtime {
	t.Helper()
	rt, err := NewRuntime(RuntimeOptions{ConfigText: text, NoEnvOverrides: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func solo(t *testing.T, rt *Runtime) *Comm {
	t.Helper()
	c, err := NewComm(rt, CommOptions{Rank: 0, WorldSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestErrorsCarryStatusAndMessage(t *testing.T) {
	_, err := NewRuntime(RuntimeOptions{ConfigText: "[codec]\nnmae = 1\n"})
	if !errors.Is(err, ErrConfig) || errors.Is(err, ErrMismatch) {
		t.Fatalf("want ErrConfig, got %v", err)
	}
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(e.Message, "name") || !strings.HasPrefix(err.Error(), "GW_ERR_CONFIG: ") {
		t.Fatalf("message lost: %v", err)
	}
	rt := newRuntime(t, "")
	if dump, err := rt.ConfigDump(false); err != nil || !strings.Contains(dump, "[codec]") {
		t.Fatalf("config dump: %v", err)
	}
	if _, err := rt.NewCodec("int9"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("want ErrNotFound, got %v", err)
	}
}

func TestSyncShapesOnOneRank(t *testing.T) {
	// powersgd through the synchronizer: the registered shape reaches the codec (a rank-1 gradient of a
	// 64 x 32 matrix comes back exactly), and a shape of another count is refused with gradwire's message.
	rt := newRuntime(t, "[codec]\nname = \"powersgd\"\n[codec.powersgd]\nrank = 2\n")
	c := solo(t, rt)
	defer c.Close()
	s, err := NewSync(c, rt)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id, err := s.Register("w", 64*32, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterShape("w", []int64{64, 31}); !errors.Is(err, ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "holds 1984 elements but the tensor has 2048") {
		t.Fatalf("want ErrInvalidArgument naming the counts, got %v", err)
	}
	if err := s.RegisterShape("w", []int64{64, 32}); err != nil {
		t.Fatal(err)
	}
	if err := s.Finalize(); err != nil {
		t.Fatal(err)
	}
	g := s.Gradient(id)
	for i := 0; i < 64; i++ {
		for j := 0; j < 32; j++ {
			g[i*32+j] = float32(i+1) * float32(j-16)
		}
	}
	want := append([]float32(nil), g...)
	if _, err := s.Step(); err != nil {
		t.Fatal(err)
	}
	for i := range want { // within float rounding (values up to 1024)
		if d := g[i] - want[i]; d > 1e-2 || d < -1e-2 {
			t.Fatalf("element %d: %g, want %g", i, g[i], want[i])
		}
	}
}

func TestClosedHandlesAreRefusedByGradwire(t *testing.T) {
	rt := newRuntime(t, "")
	c, err := rt.NewCodec("int8")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = Encode(c, nil, []float32{1, 2})
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "codec") {
		t.Fatalf("closed codec: %v", err)
	}
	if err := c.Close(); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("double close: %v", err)
	}
}

func TestCodecRoundTripAndWrongSizes(t *testing.T) {
	rt := newRuntime(t, "")
	c, _ := rt.NewCodec("int8")
	defer c.Close()
	x := make([]float32, 100)
	for i := range x {
		x[i] = float32(i) / 10
	}
	p, err := Encode(c, &CodecContext{Seed: 1}, x)
	if err != nil {
		t.Fatal(err)
	}
	y := make([]float32, 100)
	if err := Decode(c, p, y, false); err != nil {
		t.Fatal(err)
	}
	for i := range x {
		if math.Abs(float64(x[i]-y[i])) > 0.05 {
			t.Fatalf("element %d: %v -> %v", i, x[i], y[i])
		}
	}
	if err := Decode(c, p, make([]float32, 99), false); !errors.Is(err, ErrMismatch) {
		t.Fatalf("wrong-sized output: %v", err)
	}
	if err := Decode(c, p[:20], y, false); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("cut payload: %v", err)
	}
}

func TestOneRankCollectivesAndBuffers(t *testing.T) {
	rt := newRuntime(t, "")
	c := solo(t, rt)
	x := []int64{1, 2, 3}
	if err := Allreduce(c, x, x, Sum); err != nil || x[2] != 3 {
		t.Fatal(err, x)
	}
	if err := Allreduce(c, x, make([]int64, 2), Sum); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("wrong-sized output: %v", err)
	}
	if err := Allreduce(c, []uint8{1}, []uint8{0}, Sum); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("u8 reduction: %v", err)
	}
	b := NewBuffer[float64](1 << 12)
	for i := range b.Slice() {
		b.Slice()[i] = 2
	}
	r, err := AllreduceStart(c, b, b, Max)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Free(); !errors.Is(err, ErrState) {
		t.Fatalf("free in flight: %v", err)
	}
	if err := c.Close(); !errors.Is(err, ErrState) {
		t.Fatalf("close with a live request: %v", err)
	}
	if err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := r.Free(); err != nil {
		t.Fatal(err)
	}
	if b.Slice()[7] != 2 {
		t.Fatal(b.Slice()[7])
	}
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- c.Abort() }() // any goroutine may abort
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := c.Barrier(); !errors.Is(err, ErrAborted) {
		t.Fatalf("after abort: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Barrier(); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("closed comm: %v", err)
	}
}

// TestMultiRank runs TestRank as 3 ranks under `gradwire run` (GRADWIRE_CLI names the command).
func TestMultiRank(t *testing.T) {
	cli := os.Getenv("GRADWIRE_CLI")
	if cli == "" {
		t.Skip("GRADWIRE_CLI is not set (the gradwire command); CTest sets it")
	}
	for _, c := range []string{"collectives", "compressed", "sync", "mismatch"} {
		t.Run(c, func(t *testing.T) {
			cmd := exec.Command(cli, "run", "-n", "3", "--", os.Args[0], "-test.run", "^TestRank$", "-test.v")
			cmd.Env = append(os.Environ(), "GW_GO_CASE="+c)
			out, err := cmd.CombinedOutput()
			if err != nil || strings.Count(string(out), "--- PASS: TestRank") != 3 {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}
}

func gatherBits(t *testing.T, c *Comm, x []float32) {
	bits := make([]int32, len(x))
	for i, v := range x {
		bits[i] = int32(math.Float32bits(v))
	}
	all := make([]int32, len(x)*c.Size())
	if err := Allgather(c, bits, all); err != nil {
		t.Fatal(err)
	}
	for r := 0; r < c.Size(); r++ {
		for i := range bits {
			if all[r*len(x)+i] != bits[i] {
				t.Fatalf("rank %d holds other bits at %d", r, i)
			}
		}
	}
}

func allreduceDtype[T Element](t *testing.T, c *Comm, mk func(float64) T) {
	w := float64(c.Size())
	n := 500
	x := make([]T, n)
	out := make([]T, n)
	for i := range x {
		x[i] = mk(float64(c.Rank()+1) * float64(i%7+1))
	}
	if err := Allreduce(c, x, out, Sum); err != nil {
		t.Fatal(err)
	}
	for i := range out {
		if out[i] != mk(w*(w+1)/2*float64(i%7+1)) {
			t.Fatalf("%v sum at %d: %v", dtypeOf[T](), i, out[i])
		}
	}
	b := NewBuffer[T](n)
	copy(b.Slice(), x)
	r, err := AllreduceStart(c, b, b, Max)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Free(); err != nil { // Free waits first
		t.Fatal(err)
	}
	for i, v := range b.Slice() {
		if v != mk(w*float64(i%7+1)) {
			t.Fatalf("%v max at %d: %v", dtypeOf[T](), i, v)
		}
	}
	b.Free()
}

func f32bits(v float64) uint32 { return math.Float32bits(float32(v)) }

// TestRank is one rank; it runs only under gradwire run (GW_GO_CASE set by TestMultiRank).
func TestRank(t *testing.T) {
	which := os.Getenv("GW_GO_CASE")
	if which == "" {
		t.Skip("one rank of TestMultiRank")
	}
	extra := ""
	if which == "sync" {
		extra = "[codec]\nname = \"int8\"\nerror_feedback = true\n"
	}
	rt, err := NewRuntime(RuntimeOptions{ConfigText: "[runtime]\ntimeout_s = 60\n[codec.topk]\nratio = 0.05\n" + extra})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	c, err := NewComm(rt, CommOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	switch which {
	case "collectives":
		allreduceDtype(t, c, func(v float64) float32 { return float32(v) })
		allreduceDtype(t, c, func(v float64) float64 { return v })
		allreduceDtype(t, c, func(v float64) int32 { return int32(v) })
		allreduceDtype(t, c, func(v float64) int64 { return int64(v) })
		// 16-bit floats: small integers are exact; bits built from f32 by truncation (exact here)
		allreduceDtype(t, c, func(v float64) BFloat16 { return BFloat16(f32bits(v) >> 16) })
		allreduceDtype(t, c, func(v float64) Half { return halfOf(float32(v)) })
		msg := []uint8("hello from 2")
		if c.Rank() != 2 {
			msg = make([]uint8, len(msg))
		}
		if err := Broadcast(c, msg, 2); err != nil || string(msg) != "hello from 2" {
			t.Fatal(err, string(msg))
		}
		next, prev := (c.Rank()+1)%c.Size(), (c.Rank()+c.Size()-1)%c.Size()
		in := make([]int32, 3)
		if c.Rank()%2 == 0 {
			Send(c, []int32{int32(c.Rank())}, next, 1)
			Recv(c, in[:1], prev, 1)
		} else {
			Recv(c, in[:1], prev, 1)
			Send(c, []int32{int32(c.Rank())}, next, 1)
		}
		if in[0] != int32(prev) {
			t.Fatal("ring", in)
		}
		// reduce-scatter: block r of the sum lands on rank r
		x := make([]int64, 4*c.Size())
		for i := range x {
			x[i] = int64(i * (c.Rank() + 1))
		}
		block := make([]int64, 4)
		if err := ReduceScatter(c, x, block, Sum); err != nil {
			t.Fatal(err)
		}
		k := int64(c.Size() * (c.Size() + 1) / 2)
		for j, v := range block {
			if v != int64(c.Rank()*4+j)*k {
				t.Fatalf("reduce-scatter %d: %d", j, v)
			}
		}
		// allgatherv: rank r sends r + 1 bytes
		counts := []uint64{1, 2, 3}
		mine := make([]uint8, c.Rank()+1)
		for i := range mine {
			mine[i] = uint8(10 + c.Rank())
		}
		packed := make([]uint8, 6)
		if err := Allgatherv(c, mine, packed, counts); err != nil {
			t.Fatal(err)
		}
		if string(packed) != string([]uint8{10, 11, 11, 12, 12, 12}) {
			t.Fatal("allgatherv", packed)
		}
		if err := Allgatherv(c, mine, packed, counts[:2]); !errors.Is(err, ErrInvalidArgument) {
			t.Fatal("short counts", err)
		}
	case "compressed":
		for _, name := range []string{"int8", "topk"} {
			codec, err := rt.NewCodec(name)
			if err != nil {
				t.Fatal(err)
			}
			n := 10000
			in := NewBuffer[float32](n)
			out := NewBuffer[float32](n)
			for i := range in.Slice() {
				in.Slice()[i] = float32(math.Sin(float64(i)*0.1 + float64(c.Rank())))
			}
			r, err := c.AllreduceCompressedStart(codec, CodecContext{Seed: 3}, in, out, Sum)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Wait(); err != nil {
				t.Fatal(err)
			}
			r.Free()
			gatherBits(t, c, out.Slice())
			sync := make([]float32, n)
			if err := c.AllreduceCompressed(codec, CodecContext{Seed: 3}, in.Slice(), sync, Sum); err != nil {
				t.Fatal(err)
			}
			for i := range sync {
				if sync[i] != out.Slice()[i] {
					t.Fatalf("%s: blocking and nonblocking differ at %d", name, i)
				}
			}
			in.Free()
			out.Free()
			codec.Close()
		}
		// int8 with error feedback inside the collective: what one call drops the next sends, so the
		// mean of many results of one input is far closer to the exact sum than a single result.
		codec, err := rt.NewCodec("int8")
		if err != nil {
			t.Fatal(err)
		}
		ef, err := codec.NewErrorFeedback()
		if err != nil {
			t.Fatal(err)
		}
		n, steps := 10000, 20
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(math.Sin(float64(i)*0.37+float64(c.Rank())) * float64(1+c.Rank()))
		}
		exact := make([]float64, n)
		for r := 0; r < c.Size(); r++ {
			for i := range exact {
				exact[i] += float64(float32(math.Sin(float64(i)*0.37+float64(r)) * float64(1+r)))
			}
		}
		in, out := NewBuffer[float32](n), NewBuffer[float32](n)
		copy(in.Slice(), x)
		y := make([]float32, n)
		mean := make([]float64, n)
		first := 0.0
		for s := 0; s < steps; s++ {
			ctx := CodecContext{Seed: 11, Step: uint64(s)}
			if s%2 == 0 {
				if err := c.AllreduceCompressedEF(ef, ctx, x, y, Sum); err != nil {
					t.Fatal(err)
				}
			} else {
				r, err := c.AllreduceCompressedEFStart(ef, ctx, in, out, Sum)
				if err != nil {
					t.Fatal(err)
				}
				if err := r.Wait(); err != nil {
					t.Fatal(err)
				}
				r.Free()
				copy(y, out.Slice())
			}
			gatherBits(t, c, y)
			for i := range y {
				mean[i] += float64(y[i]) / float64(steps)
				if s == 0 {
					first = math.Max(first, math.Abs(float64(y[i])-exact[i]))
				}
			}
		}
		worst := 0.0
		for i := range mean {
			worst = math.Max(worst, math.Abs(mean[i]-exact[i]))
		}
		if !(first > 0 && worst <= first/4) {
			t.Fatalf("int8 + error feedback: mean of %d off by %g, one result by %g", steps, worst, first)
		}
		state, err := ef.State()
		if err != nil || len(state) == 0 {
			t.Fatalf("error feedback state: %v (%d bytes)", err, len(state))
		}
		if err := ef.LoadState(state); err != nil {
			t.Fatal(err)
		}
		if err := ef.LoadState(state[:len(state)/2]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("a truncated state loaded: %v", err)
		}
		in.Free()
		out.Free()
		ef.Close()
		codec.Close()
		// Compressed reduce-scatter and allgather: none gives the dense collectives' bits, int8 stays
		// within its bound, blocking and nonblocking agree, the allgather is bit-identical everywhere.
		shard, size := 999, c.Size()
		full := make([]float32, size*shard)
		for i := range full {
			full[i] = float32(math.Cos(float64(i)*0.11+float64(c.Rank())) * float64(1+c.Rank()))
		}
		for _, name := range []string{"none", "int8"} {
			codec, err := rt.NewCodec(name)
			if err != nil {
				t.Fatal(err)
			}
			got, dense := make([]float32, shard), make([]float32, shard)
			if err := c.ReduceScatterCompressed(codec, CodecContext{Seed: 5}, full, got, Sum); err != nil {
				t.Fatal(err)
			}
			if err := ReduceScatter(c, full, dense, Sum); err != nil {
				t.Fatal(err)
			}
			bound := 0.0
			if name == "int8" {
				bound = float64(size*(size-1))/254*1.01 + 1e-5
			}
			for i := range got {
				if d := math.Abs(float64(got[i] - dense[i])); d > bound {
					t.Fatalf("%s: reduce-scatter element %d off by %g", name, i, d)
				}
			}
			in, out := NewBuffer[float32](size*shard), NewBuffer[float32](shard)
			copy(in.Slice(), full)
			r, err := c.ReduceScatterCompressedStart(codec, CodecContext{Seed: 5}, in, out, Sum)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Wait(); err != nil {
				t.Fatal(err)
			}
			r.Free()
			for i := range got {
				if out.Slice()[i] != got[i] {
					t.Fatalf("%s: blocking and nonblocking reduce-scatter differ at %d", name, i)
				}
			}
			gathered, given := make([]float32, size*shard), make([]float32, size*shard)
			if err := c.AllgatherCompressed(codec, CodecContext{Seed: 5}, full[:shard], gathered); err != nil {
				t.Fatal(err)
			}
			gatherBits(t, c, gathered)
			if err := Allgather(c, full[:shard], given); err != nil {
				t.Fatal(err)
			}
			for i := range given {
				if d := math.Abs(float64(gathered[i] - given[i])); d > bound {
					t.Fatalf("%s: allgather element %d off by %g", name, i, d)
				}
			}
			in.Free()
			out.Free()
			codec.Close()
		}
	case "sync":
		s, err := NewSync(c, rt)
		if err != nil {
			t.Fatal(err)
		}
		d, rows := 64, 256
		id, err := s.Register("w", d, true)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Finalize(); err != nil {
			t.Fatal(err)
		}
		a := make([]float32, rows*d)
		b := make([]float32, rows)
		seed := uint64(c.Rank()*7919 + 1)
		rnd := func() float32 {
			seed = seed*6364136223846793005 + 1442695040888963407
			return float32(seed>>40)/float32(1<<24) - 0.5
		}
		for i := range a {
			a[i] = rnd()
		}
		for i := 0; i < rows; i++ {
			for j := 0; j < d; j++ {
				b[i] += a[i*d+j] * float32(math.Cos(float64(j)*0.3))
			}
		}
		loss := func(w []float32) float64 {
			l := 0.0
			for i := 0; i < rows; i++ {
				e := -b[i]
				for j := 0; j < d; j++ {
					e += a[i*d+j] * w[j]
				}
				l += float64(e * e)
			}
			return l / float64(rows)
		}
		w := s.Parameter(id)
		first := loss(w)
		for step := 0; step < 60; step++ {
			g := s.Gradient(id)
			for j := range g {
				g[j] = 0
			}
			for i := 0; i < rows; i++ {
				e := -b[i]
				for j := 0; j < d; j++ {
					e += a[i*d+j] * w[j]
				}
				for j := 0; j < d; j++ {
					g[j] += 2 * e * a[i*d+j] / float32(rows)
				}
			}
			f, err := s.Step()
			if err != nil {
				t.Fatal(err)
			}
			if f.Apply() {
				for j := range w {
					w[j] -= 2 * g[j]
				}
			}
		}
		final := append([]float32(nil), w...)
		st, _ := s.Stats()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		gatherBits(t, c, final)
		if last := loss(final); last > first*0.1 || st.Steps != 60 {
			t.Fatalf("loss %v -> %v, %+v", first, last, st)
		}
		fmt.Printf("sync: loss %.4f -> %.6f, compression %.2fx\n", first, loss(final), st.CompressionRatio)
	case "mismatch":
		n := 4
		if c.Rank() == 1 {
			n = 5
		}
		x := make([]float32, n)
		err := Allreduce(c, x, x, Sum)
		if !errors.Is(err, ErrMismatch) {
			t.Fatalf("want ErrMismatch, got %v", err)
		}
	}
}

// halfOf converts small integers exactly (test helper; not a general conversion).
func halfOf(f float32) Half {
	if f == 0 {
		return 0
	}
	b := math.Float32bits(f)
	exp := int((b>>23)&0xff) - 127 + 15
	return Half(uint16(exp)<<10 | uint16((b>>13)&0x3ff))
}
