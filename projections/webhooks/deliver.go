package webhooks

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/linkd/linkd/domain/webhook"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/ssrf"
	"github.com/linkd/linkd/internal/stdwebhooks"
)

// DefaultSchedule is the wait before each retry (DECISIONS.md): the first
// attempt is at once, the last retry 24 h after the one before.
var DefaultSchedule = []time.Duration{
	5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour,
	10 * time.Hour, 14 * time.Hour, 20 * time.Hour, 24 * time.Hour,
}

// ParseSchedule reads LINKD_WEBHOOK_RETRY_SCHEDULE: comma-separated Go
// durations.
func ParseSchedule(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		d, err := time.ParseDuration(f)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("retry schedule: %q is not a duration", f)
		}
		out = append(out, d)
	}
	if len(out) == 0 {
		return nil, errors.New("retry schedule: no duration")
	}
	return out, nil
}

// DefaultClaimTimeout is DeliveryOptions.ClaimTimeout's default.
const DefaultClaimTimeout = 30 * time.Second

// DeliveryOptions configure deliveries.
type DeliveryOptions struct {
	// Schedule is the wait before each retry (DefaultSchedule).
	Schedule []time.Duration
	// Timeout bounds one attempt (15 s).
	Timeout time.Duration
	// Concurrency is how many requests one webhook has in flight at most
	// (32): a slow receiver holds its own webhook's requests only. With a
	// queue shared by n live instances, each sends up to Concurrency/n
	// (rounded up) of them.
	Concurrency int
	// FailureWindow: a webhook that only failed for this long is turned
	// off (five days).
	FailureWindow time.Duration
	// Guard refuses destinations on forbidden addresses.
	Guard *ssrf.Guard
	// Decrypt opens a webhook's secret.
	Decrypt func(string) (string, error)
	// Disable turns a webhook off (the DisableWebhook command).
	Disable func(ctx context.Context, webhookID, reason string) error
	// ClaimTimeout is how long the messages a deliverer took from a queue
	// shared by many instances (Options.Postgres) stay its own unless it
	// says it still holds them (it does every third of it): the messages
	// of a deliverer that died are sent by another after at most this
	// (30 s).
	ClaimTimeout time.Duration

	// afterRecord, when set (tests only), runs after each batch of
	// results is recorded, before the runners forget its messages.
	afterRecord func()
}

// result is the outcome of one attempt.
type result struct {
	msg        message
	webhookID  string
	status     int // 0: no answer
	body       string
	dur        time.Duration
	at         time.Time
	retryAfter time.Duration
	abandon    bool // the webhook is off or gone: no attempt was made
}

type message struct {
	next      int64 // when it was due (Unix ms)
	id        string
	eventType string
	body      []byte
	attempts  int
	createdAt int64
	round     int64 // a replay starts a new round (store.go addColumns)
	// hot: handed off in memory, it has no row yet (hot.go); eventID and
	// before are then its event's and the position before it.
	hot     bool
	eventID string
	before  eventstore.Position
}

// roundKey names an attempt of a round of a message. The attempts are
// in it because a failed attempt is recorded (the message due again, its
// claim ended) before the runner forgets it: a take in between finds the
// next attempt, which must be sent, not skipped as the one in flight (it
// would stay claimed, unsent, until its claim ended).
type roundKey struct {
	id       string
	round    int64
	attempts int
}

func (m *message) key() roundKey {
	if m.hot {
		return roundKey{m.id, -1, m.attempts} // not a round of a row
	}
	return roundKey{m.id, m.round, m.attempts}
}

// Deliverer sends the messages of the store's queue.
type Deliverer struct {
	s       *Store
	o       DeliveryOptions
	client  *http.Client
	results chan result

	mu      sync.Mutex
	runners map[string]*runner
	ctx     context.Context

	disabling sync.Map // webhook id -> true while a Disable is under way

	// Leading: this instance holds the deliverers' lease (with
	// Options.Coordinate).
	Leading   atomic.Bool
	Delivered atomic.Int64 // attempts answered 2xx
	Failed    atomic.Int64 // attempts that failed
	lagMillis atomic.Int64
	pending   atomic.Int64
	// tableDue is the last count of the messages due in the table, made
	// at countedAt, and countEvery how long until the next (measure).
	tableDue   int64
	countedAt  time.Time
	countEvery time.Duration
	// share is how many requests a webhook has in flight here at most:
	// Concurrency, divided between the live deliverers of a shared queue.
	share atomic.Int32
}

// NewDeliverer prepares deliveries of s's messages; Run sends them.
func (s *Store) NewDeliverer(o DeliveryOptions) *Deliverer {
	if len(o.Schedule) == 0 {
		o.Schedule = DefaultSchedule
	}
	if o.Timeout <= 0 {
		o.Timeout = 15 * time.Second
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 32
	}
	if o.FailureWindow <= 0 {
		o.FailureWindow = 5 * 24 * time.Hour
	}
	if o.Guard == nil {
		o.Guard = ssrf.New(nil, nil)
	}
	if o.ClaimTimeout <= 0 {
		o.ClaimTimeout = DefaultClaimTimeout
	}
	if pq, ok := s.q.(*pgQueue); ok {
		pq.claimFor = o.ClaimTimeout
	}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           o.Guard.Dialer(o.Timeout).DialContext,
		MaxIdleConnsPerHost:   o.Concurrency,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: o.Timeout,
		ForceAttemptHTTP2:     true,
	}
	d := &Deliverer{
		s: s, o: o, results: make(chan result, 4096), runners: map[string]*runner{},
		client: &http.Client{
			Transport: tr, Timeout: o.Timeout,
			// Redirects are not followed: a 3xx is a failure.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	d.share.Store(int32(o.Concurrency))
	s.notify = d.wake
	return d
}

// Delivering says whether this instance delivers: always, unless it
// coordinates with others (Options.Coordinate) and does not hold their
// lease.
func (d *Deliverer) Delivering() bool { return d.s.coord == nil || d.Leading.Load() }

// Lag is the age of the oldest message due and not delivered.
func (d *Deliverer) Lag() time.Duration { return time.Duration(d.lagMillis.Load()) * time.Millisecond }

// Pending is how many messages wait for an attempt.
func (d *Deliverer) Pending() int64 { return d.pending.Load() }

// Run delivers until ctx ends. An instance that coordinates with others
// (Options.Coordinate) delivers while it holds their lease, and waits for
// it otherwise (progress.go).
func (d *Deliverer) Run(ctx context.Context) error {
	if d.s.coord == nil {
		return d.run(ctx)
	}
	// Every instance keeps a deliveries log (the attempts the log brings):
	// each prunes its own, holder or not.
	every(ctx, time.Hour, d.prune)
	for ctx.Err() == nil {
		held, release, err := d.s.coord.AcquireLease(ctx, LeaseName)
		if err != nil {
			if ctx.Err() == nil {
				d.s.log.Warn("webhooks: taking the deliverers' lease", "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
			continue
		}
		d.Leading.Store(true)
		// New messages are delivered at once, while those the last holder
		// left are made again (which may read much of the log).
		turn, end := context.WithCancel(held)
		var failed atomic.Bool
		caughtUp := make(chan struct{})
		go func() {
			defer close(caughtUp)
			if err := d.s.startDelivering(turn); err != nil && turn.Err() == nil {
				d.s.log.Warn("webhooks: making the messages the last deliverer left", "err", err)
				failed.Store(true)
				end() // the next turn makes them
			}
		}()
		_ = d.run(turn)
		end()
		<-caughtUp
		// What this turn finished is saved for the next holder (a lease
		// lost is no reason not to: what is saved is done).
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if err := d.s.saveProgress(sctx); err != nil {
			d.s.log.Warn("webhooks: saving progress", "err", err)
		}
		cancel()
		d.s.stopDelivering()
		d.Leading.Store(false)
		release()
		if failed.Load() {
			select { // the store may be unreachable: not at once again
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
	return nil
}

// run delivers until ctx ends.
func (d *Deliverer) run(ctx context.Context) error {
	d.mu.Lock()
	d.ctx = ctx
	d.mu.Unlock()
	if d.s.hot != nil {
		d.s.hot.setOn(true)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.write(ctx)
	}()
	// The deliverer says it is alive every second, apart from the work
	// below (a prune may take long): on PostgreSQL its claims end when it
	// stops (ADR 0128). It says so once before its first claim.
	d.count(ctx)
	beatCtx, stopBeat := context.WithCancel(ctx)
	beating := every(beatCtx, time.Second, d.count)
	defer stopBeat()
	t := time.NewTicker(min(time.Second, d.o.ClaimTimeout/3))
	defer t.Stop()
	var pruned, extended time.Time
	for {
		if time.Since(extended) >= d.o.ClaimTimeout/3 {
			extended = time.Now()
			d.extend(ctx)
		}
		d.sync(ctx)
		d.measure(ctx)
		if time.Since(pruned) > time.Hour {
			pruned = time.Now()
			d.prune(ctx)
		}
		if err := d.s.spill(ctx, d.s.opts.Now().Add(-spillAfter).UnixMilli(), false); err != nil && ctx.Err() == nil {
			d.s.log.Warn("webhooks: writing messages waiting in memory", "err", err)
		}
		if err := d.s.saveProgress(ctx); err != nil && ctx.Err() == nil {
			d.s.log.Warn("webhooks: saving progress", "err", err)
		}
		select {
		case <-ctx.Done():
			d.mu.Lock()
			runners := make([]*runner, 0, len(d.runners))
			for _, r := range d.runners {
				r.cancel()
				runners = append(runners, r)
			}
			d.mu.Unlock()
			// A claim already on its way to the queue lands before the
			// release below, not after it (where it would hold its messages
			// until the claim ends).
			for _, r := range runners {
				<-r.stopped
			}
			d.mu.Lock()
			clear(d.runners) // a next run (a lease taken again) starts its own
			d.mu.Unlock()
			<-done
			// Results the writer left are recorded: their messages are
			// not sent again by the next run.
			d.drain(context.WithoutCancel(ctx))
			// What waits in memory, or was being sent, is written: the
			// next start sends it. Should that fail, the checkpoint held
			// back makes it again from the log.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if d.s.hot != nil {
				d.s.hot.setOn(false)
				if err := d.s.spill(rctx, 0, true); err != nil {
					d.s.log.Warn("webhooks: writing messages waiting in memory", "err", err)
				}
			}
			// What this deliverer held is another's to send now, not after
			// its claims end; and it is not counted once it said so.
			stopBeat()
			<-beating
			if err := d.s.q.release(rctx); err != nil {
				d.s.log.Warn("webhooks: releasing claims", "err", err)
			}
			return nil
		case <-t.C:
		}
	}
}

// every calls f every interval, in a goroutine of its own, until ctx
// ends; the channel it returns is closed then.
func every(ctx context.Context, interval time.Duration, f func(context.Context)) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				f(ctx)
			}
		}
	}()
	return done
}

// drain records the results waiting when the writer stopped.
func (d *Deliverer) drain(ctx context.Context) {
	var rest []result
taking:
	for {
		select {
		case r := <-d.results:
			rest = append(rest, r)
		default:
			break taking
		}
	}
	if len(rest) == 0 {
		return
	}
	if _, err := d.record(ctx, rest); err != nil {
		d.s.log.Warn("webhooks: recording attempts", "err", err)
		return
	}
	d.s.progressed(rest)
}

// extend keeps the claims of the messages the runners hold (sent, being
// sent or waiting for a worker).
func (d *Deliverer) extend(ctx context.Context) {
	var held []string
	d.mu.Lock()
	for _, r := range d.runners {
		r.mu.Lock()
		for k := range r.inflight {
			held = append(held, k.id)
		}
		r.mu.Unlock()
	}
	d.mu.Unlock()
	if err := d.s.q.extend(ctx, held, d.s.opts.Now()); err != nil && ctx.Err() == nil {
		d.s.log.Warn("webhooks: extending claims", "err", err)
	}
}

// count shares each webhook's concurrency between the live deliverers.
func (d *Deliverer) count(ctx context.Context) {
	n, err := d.s.q.alive(ctx, d.s.opts.Now().UnixMilli())
	if err != nil {
		if ctx.Err() == nil {
			d.s.log.Warn("webhooks: counting the deliverers", "err", err)
		}
		return
	}
	d.share.Store(int32((d.o.Concurrency + n - 1) / n))
}

// sync starts a runner for each active webhook and stops the others.
func (d *Deliverer) sync(ctx context.Context) {
	active := d.s.activeHookIDs()
	keep := map[string]bool{}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, id := range active {
		keep[id] = true
		if _, ok := d.runners[id]; !ok {
			d.runners[id] = d.startRunner(ctx, id)
		}
	}
	for id, r := range d.runners {
		if !keep[id] {
			r.cancel()
			delete(d.runners, id)
		}
	}
}

// wake tells the runners of webhooks that they have new messages.
func (d *Deliverer) wake(ids []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, id := range ids {
		r, ok := d.runners[id]
		if !ok && d.ctx != nil && d.ctx.Err() == nil {
			r = d.startRunner(d.ctx, id)
			d.runners[id] = r
		}
		if r != nil {
			select {
			case r.wakeC <- struct{}{}:
			default:
			}
		}
	}
}

// countShare bounds the time measure spends counting the messages due in
// the table: a count that took t is made again t/countShare later at the
// earliest. A count reads every message waiting; with a receiver down
// under load (hundreds of thousands of them), counting every second took
// a seventh of linkd's CPU (bench/webhook-down.sh).
const countShare = 0.02

// measure updates Lag (every call: the oldest message due is one step in
// an index) and Pending (its count of the table at most as often as
// countShare allows). Only the run loop calls it.
func (d *Deliverer) measure(ctx context.Context) {
	now := d.s.opts.Now().UnixMilli()
	oldest, err := d.s.q.oldestDue(ctx, now)
	if err != nil {
		return
	}
	switch {
	case !oldest.Valid:
		d.tableDue = 0 // none due: nothing to count
	case time.Since(d.countedAt) >= d.countEvery:
		began := time.Now()
		n, err := d.s.q.dueCount(ctx, now)
		if err != nil {
			return
		}
		d.tableDue, d.countedAt = n, began
		d.countEvery = time.Duration(float64(time.Since(began)) / countShare)
	}
	n := d.tableDue
	if d.s.hot != nil {
		hn, ho := d.s.hot.stats()
		n += hn
		if ho.Valid && (!oldest.Valid || ho.Int64 < oldest.Int64) {
			oldest = ho
		}
	}
	d.pending.Store(n)
	if oldest.Valid {
		d.lagMillis.Store(max(0, now-oldest.Int64))
	} else {
		d.lagMillis.Store(0)
	}
}

// Retention is how long attempts and finished messages are kept.
const Retention = 30 * 24 * time.Hour

// prune forgets attempts and finished messages older than Retention.
func (d *Deliverer) prune(ctx context.Context) {
	before := d.s.opts.Now().Add(-Retention).UnixMilli()
	if err := d.s.q.prune(ctx, before); err != nil && ctx.Err() == nil {
		d.s.log.Warn("webhooks: pruning", "err", err)
	}
}

// runner delivers the messages of one webhook with up to Concurrency
// requests at once.
type runner struct {
	d      *Deliverer
	id     string
	cancel context.CancelFunc
	// stopped is closed when the loop has returned: it takes (claims) no
	// more messages.
	stopped chan struct{}
	wakeC   chan struct{}
	work    chan message
	mu      sync.Mutex
	// inflight are the messages handed out and not yet recorded, by round:
	// a replay's round of a message in flight is sent too (its claim would
	// wait otherwise), as a replay asks.
	inflight map[roundKey]bool
	sending  atomic.Int32 // requests being sent
	key      []byte
	keyOf    string // the encrypted secret key was decoded from
}

func (d *Deliverer) startRunner(parent context.Context, id string) *runner {
	ctx, cancel := context.WithCancel(parent)
	r := &runner{d: d, id: id, cancel: cancel, stopped: make(chan struct{}), wakeC: make(chan struct{}, 1), work: make(chan message, d.o.Concurrency), inflight: map[roundKey]bool{}}
	for range d.o.Concurrency {
		go r.worker(ctx)
	}
	go func() {
		defer close(r.stopped)
		r.loop(ctx)
	}()
	return r
}

func (r *runner) loop(ctx context.Context) {
	for ctx.Err() == nil {
		r.mu.Lock()
		busy := len(r.inflight)
		r.mu.Unlock()
		msgs, next, err := r.d.s.q.take(ctx, r.id, r.d.s.opts.Now(), int(r.d.share.Load()), busy)
		if err != nil {
			if ctx.Err() == nil {
				r.d.s.log.Warn("webhooks: reading due messages", "webhook", r.id, "err", err)
			}
			next = time.Second
		}
		// Every message taken is held from now (its claim is extended),
		// also while it waits for a worker.
		fresh := msgs[:0]
		r.mu.Lock()
		for _, m := range msgs {
			if k := m.key(); !r.inflight[k] {
				r.inflight[k] = true
				fresh = append(fresh, m)
			}
		}
		r.mu.Unlock()
		sent := 0
		for _, m := range fresh {
			select {
			case r.work <- m:
				sent++
			case <-ctx.Done():
				return
			}
		}
		if sent > 0 {
			continue
		}
		if next <= 0 || next > time.Second {
			next = time.Second
		}
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-r.wakeC:
		case <-t.C:
		}
		t.Stop()
	}
}

// acquire waits until fewer requests than the deliverer's share of the
// concurrency are being sent, and counts one more.
func (r *runner) acquire(ctx context.Context) bool {
	for r.sending.Add(1) > r.d.share.Load() {
		r.sending.Add(-1)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(5 * time.Millisecond):
		}
	}
	return true
}

func (r *runner) done(k roundKey) {
	r.mu.Lock()
	delete(r.inflight, k)
	r.mu.Unlock()
	select {
	case r.wakeC <- struct{}{}:
	default:
	}
}

func (r *runner) worker(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-r.work:
			if !r.acquire(ctx) {
				return
			}
			res := r.send(ctx, m)
			r.sending.Add(-1)
			select {
			case r.d.results <- res:
			case <-ctx.Done():
				return
			}
		}
	}
}

// send makes one attempt.
func (r *runner) send(ctx context.Context, m message) result {
	d := r.d
	res := result{msg: m, webhookID: r.id}
	h, ok := d.s.hook(r.id)
	if !ok || !h.Active {
		res.abandon = true
		return res
	}
	key, err := r.secretKey(h.SecretEnc)
	if err != nil {
		res.at, res.body = d.s.opts.Now(), "linkd: the webhook's secret cannot be read"
		return res
	}
	start := time.Now()
	res.at = d.s.opts.Now()
	if refused := r.refused(h.URL); refused != "" {
		res.body = refused
		return res
	}
	ctx, cancel := context.WithTimeout(ctx, d.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(m.body))
	if err != nil {
		res.body = "linkd: " + err.Error()
		return res
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "linkd-webhooks/1")
	req.Header.Set(stdwebhooks.HeaderID, m.id)
	req.Header.Set(stdwebhooks.HeaderTimestamp, strconv.FormatInt(res.at.Unix(), 10))
	req.Header.Set(stdwebhooks.HeaderSignature, stdwebhooks.Sign(key, m.id, res.at, m.body))
	resp, err := d.client.Do(req)
	res.dur = time.Since(start)
	if err != nil {
		res.body = describe(err, d.o.Timeout)
		return res
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // keep the connection
	res.dur = time.Since(start)
	res.status, res.body = resp.StatusCode, string(b)
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		res.retryAfter = retryAfter(resp.Header.Get("Retry-After"), res.at)
	}
	return res
}

// secretKey is the HMAC key of the webhook's secret, decrypted once.
func (r *runner) secretKey(enc string) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.key != nil && r.keyOf == enc {
		return r.key, nil
	}
	secret, err := r.d.o.Decrypt(enc)
	if err != nil {
		return nil, err
	}
	key, err := stdwebhooks.Key(secret)
	if err != nil {
		return nil, err
	}
	r.key, r.keyOf = key, enc
	return key, nil
}

// refused says why a URL's host may not be called, checked before any
// connection: an address literal, or a name that resolves to a forbidden
// address. The dialer checks the address it connects to as well.
func (r *runner) refused(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "linkd: invalid URL"
	}
	if a, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil && r.d.o.Guard.Forbidden(a) {
		return "linkd: destination refused: " + a.String() + " is a loopback, private, link-local or unspecified address"
	}
	return ""
}

func describe(err error, timeout time.Duration) string {
	var ne net.Error
	switch {
	case errors.Is(err, ssrf.ErrForbidden):
		return "linkd: destination refused: it resolves to a loopback, private, link-local or unspecified address"
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return fmt.Sprintf("linkd: no answer within %s", timeout)
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return "linkd: the host name does not resolve"
	}
	return "linkd: " + err.Error()
}

// retryAfter reads a Retry-After header: seconds or an HTTP date. It is
// bounded to a day.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.Atoi(v); err == nil {
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), 24*time.Hour)
}

// nextDelay is the wait after a failed attempt (counted from 1), with
// jitter of ±10%, or false when no retry is left.
func (d *Deliverer) nextDelay(attempt int, ra time.Duration) (time.Duration, bool) {
	if attempt > len(d.o.Schedule) {
		return 0, false
	}
	if ra > 0 {
		return ra, true
	}
	base := d.o.Schedule[attempt-1]
	return time.Duration(float64(base) * (0.9 + 0.2*rand.Float64())), true
}

// maxRecordWait bounds the wait between two tries of writing a batch of
// results.
const maxRecordWait = 5 * time.Second

// write records the results of attempts, many per transaction.
func (d *Deliverer) write(ctx context.Context) {
	batch := make([]result, 0, 1024)
	for {
		batch = batch[:0]
		select {
		case <-ctx.Done():
			return
		case r := <-d.results:
			batch = append(batch, r)
		}
		timer := time.NewTimer(10 * time.Millisecond)
	fill:
		for len(batch) < cap(batch) {
			select {
			case r := <-d.results:
				batch = append(batch, r)
			case <-timer.C:
				break fill
			}
		}
		timer.Stop()
		// Until the batch is written: dropped, its messages would stay
		// taken (in memory, or claimed) and unsent until a restart. While
		// the queue is away the runners wait on results, as they should.
		var disable map[string]string
		for wait := 100 * time.Millisecond; ; wait = min(2*wait, maxRecordWait) {
			var err error
			if disable, err = d.record(context.WithoutCancel(ctx), batch); err == nil {
				break
			}
			d.s.log.Warn("webhooks: recording attempts; will retry", "err", err, "in", wait)
			select {
			case <-ctx.Done():
				// Stopping: the messages are still pending, held in
				// memory or claimed, and the stop writes or releases them.
				return
			case <-time.After(wait):
			}
		}
		if d.o.afterRecord != nil {
			d.o.afterRecord()
		}
		d.mu.Lock()
		for _, r := range batch {
			if run := d.runners[r.webhookID]; run != nil {
				run.done(r.msg.key())
			}
		}
		d.mu.Unlock()
		d.s.progressed(batch)
		for id, reason := range disable {
			d.disable(id, reason)
		}
	}
}

// record writes a batch of attempts; it returns the webhooks to turn off.
func (d *Deliverer) record(ctx context.Context, batch []result) (map[string]string, error) {
	disable := map[string]string{}
	outs := make([]outcome, 0, len(batch))
	failing := map[string]int64{} // first failure in the batch
	last := map[string]int64{}    // last failure
	succeeded := map[string]bool{}
	var ok, failed int64
	for _, r := range batch {
		o := outcome{msg: r.msg, webhookID: r.webhookID, abandon: r.abandon, status: "failed"}
		if r.abandon {
			outs = append(outs, o)
			continue
		}
		o.attempt, o.at, o.durMS, o.respBody = r.msg.attempts+1, r.at.UnixMilli(), r.dur.Milliseconds(), cleanText(r.body)
		if r.status != 0 {
			o.respStatus = sql.NullInt64{Int64: int64(r.status), Valid: true}
		}
		if r.status >= 200 && r.status < 300 {
			ok++
			succeeded[r.webhookID] = true
			o.result, o.status = "succeeded", "succeeded"
			outs = append(outs, o)
			continue
		}
		failed++
		o.result = "failed"
		if r.status == http.StatusGone {
			disable[r.webhookID] = webhook.ReasonGone
		} else if delay, more := d.nextDelay(o.attempt, r.retryAfter); more {
			o.next, o.status = sql.NullInt64{Int64: r.at.Add(delay).UnixMilli(), Valid: true}, "pending"
		}
		outs = append(outs, o)
		if f, seen := failing[r.webhookID]; !seen || o.at < f {
			failing[r.webhookID] = o.at
		}
		last[r.webhookID] = max(last[r.webhookID], o.at)
	}
	// A success in the batch ends the webhook's run of failures.
	healthy := make([]string, 0, len(succeeded))
	for id := range succeeded {
		healthy = append(healthy, id)
		delete(failing, id)
	}
	since, err := d.s.q.record(ctx, outs, failing, healthy)
	if err != nil {
		return nil, err
	}
	d.s.publishAttempts(outs)
	for id, s := range since {
		if _, gone := disable[id]; !gone && last[id]-s >= d.o.FailureWindow.Milliseconds() {
			disable[id] = webhook.ReasonFailures
		}
	}
	d.Delivered.Add(ok)
	d.Failed.Add(failed)
	return disable, nil
}

// disable turns a webhook off in the background, once at a time.
func (d *Deliverer) disable(id, reason string) {
	if d.o.Disable == nil {
		return
	}
	if _, busy := d.disabling.LoadOrStore(id, true); busy {
		return
	}
	go func() {
		defer d.disabling.Delete(id)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := d.o.Disable(ctx, id, reason); err != nil {
			d.s.log.Warn("webhooks: turning a webhook off", "webhook", id, "reason", reason, "err", err)
		}
	}()
}
