package nexmark

import (
	"math"
	"strconv"
	"sync"
)

// The event model of Nexmark's generator (nexmark-flink's generator/model):
// every event is a pure function of its index in the global event sequence
// and the configuration, so any split of the sequence produces the same
// events as one generator would, and a restored reader produces exactly the
// events it has not emitted yet.
//
// The first event of the sequence has index 0. As in nexmark-flink (which
// starts both its first event id and its first event number at 1), the event
// with index i has event number i+1, which fixes its timestamp, and event id
// i+2, which fixes its kind and the ids it refers to.

// Event kinds, the values of the event_type column.
const (
	KindPerson  = 0
	KindAuction = 1
	KindBid     = 2
)

// Constants of the generator model.
const (
	firstAuctionID  = 1000
	firstPersonID   = 1000
	firstCategoryID = 10
	numCategories   = 5

	personIDLead   = 10  // yet-to-be-created people a bid or auction may name
	auctionIDLead  = 10  // yet-to-be-created auctions a bid may name
	hotSellerBase  = 100 // hot sellers are the first of each batch of 100 people
	hotBidderBase  = 100 // hot bidders the second of each batch of 100 people
	hotAuctionBase = 100

	hotChannelsRatio = 2
	numChannels      = 10000
	minStringLength  = 3
	reusableExtraLen = 1 << 20

	numInFlightAuctions = 100
	numActivePeople     = 1000
)

// genConfig is the immutable description of an event sequence.
type genConfig struct {
	personProportion, auctionProportion, bidProportion, totalProportion int64

	hotAuctionRatio, hotBiddersRatio, hotSellersRatio int

	avgPersonSize, avgAuctionSize, avgBidSize int

	// baseTime is the timestamp origin (epoch ms, read as a UTC date-time).
	baseTime int64
	// With one rate, an event's timestamp is baseTime + n·delayUs/1000.
	delayUs float64
	// With two rates (first-event.rate ≠ next-event.rate), the rate follows
	// rate.shape: delays[k] µs between events for stepLengthSec seconds each,
	// cycling every eventsPerEpoch events (epochPeriodMs).
	delays         []int64
	stepLengthSec  int64
	eventsPerEpoch int64
	epochPeriodMs  int64
}

// timestamp is the event time (epoch ms) of event number n.
func (c *genConfig) timestamp(n int64) int64 {
	if c.delays == nil {
		return c.baseTime + int64(float64(n)*c.delayUs)/1000
	}
	epoch, k := n/c.eventsPerEpoch, n%c.eventsPerEpoch
	var offsetMs int64
	for _, d := range c.delays {
		inStep := c.stepLengthSec * 1_000_000 / d
		if k < inStep {
			return c.baseTime + epoch*c.epochPeriodMs + offsetMs + d*k/1000
		}
		k -= inStep
		offsetMs += d * inStep / 1000
	}
	return c.baseTime + (epoch+1)*c.epochPeriodMs // unreachable: k < eventsPerEpoch
}

// setRates derives the inter-event delays from the rates and the shape, as
// nexmark's RateShape does for a single generator (the global sequence is
// one timeline).
func (c *genConfig) setRates(first, next int64, shape string, periodSec int64) {
	if first == next {
		c.delayUs = 1e6 / float64(first)
		return
	}
	periodUs := func(rate int64) int64 { return (1_000_000 + rate/2) / rate }
	steps := 2
	if shape == shapeSine {
		steps = 10
	}
	switch shape {
	case shapeSquare:
		c.delays = []int64{periodUs(first), periodUs(next)}
	default:
		mid, amp := float64(first+next)/2, float64(first-next)/2
		for i := range steps {
			r := mid + amp*math.Cos(2*math.Pi*float64(i)/float64(steps))
			c.delays = append(c.delays, periodUs(max(int64(math.Round(r)), 1)))
		}
	}
	c.stepLengthSec = (periodSec + int64(steps) - 1) / int64(steps)
	for _, d := range c.delays {
		inStep := c.stepLengthSec * 1_000_000 / d
		c.eventsPerEpoch += inStep
		c.epochPeriodMs += d * inStep / 1000
	}
	if c.eventsPerEpoch == 0 { // a period too short for one event per step
		c.delays, c.delayUs = nil, 1e6/float64(first)
	}
}

// kind returns the event kind of event id.
func (c *genConfig) kind(id int64) int {
	rem := id % c.totalProportion
	switch {
	case rem < c.personProportion:
		return KindPerson
	case rem < c.personProportion+c.auctionProportion:
		return KindAuction
	}
	return KindBid
}

// lastPerson is the last person id (base 0) created up to event id: the
// current one when id is a person.
func (c *genConfig) lastPerson(id int64) int64 {
	epoch, off := id/c.totalProportion, id%c.totalProportion
	if off >= c.personProportion {
		off = c.personProportion - 1
	}
	return epoch*c.personProportion + off
}

// lastAuction is the last auction id (base 0) created up to event id.
func (c *genConfig) lastAuction(id int64) int64 {
	epoch, off := id/c.totalProportion, id%c.totalProportion
	switch {
	case off < c.personProportion:
		epoch--
		off = c.auctionProportion - 1
	case off >= c.personProportion+c.auctionProportion:
		off = c.auctionProportion - 1
	default:
		off -= c.personProportion
	}
	return epoch*c.auctionProportion + off
}

// randomPerson picks one of the active people, or a few not created yet.
func (c *genConfig) randomPerson(id int64, r *rng) int64 {
	people := c.lastPerson(id) + 1
	active := min(people, numActivePeople)
	return people - active + r.long(active+personIDLead)
}

// randomAuction picks one of the auctions likely in flight, or a few not
// created yet.
func (c *genConfig) randomAuction(id int64, r *rng) int64 {
	hi := c.lastAuction(id)
	lo := max(hi-numInFlightAuctions, 0)
	return lo + r.long(hi-lo+1+auctionIDLead)
}

// auctionLength is the random lifetime of an auction created at event number
// n with timestamp ts: on average the time until numInFlightAuctions more
// auctions have been created.
func (c *genConfig) auctionLength(n, ts int64, r *rng) int64 {
	ahead := int64(numInFlightAuctions) * c.totalProportion / max(c.auctionProportion, 1)
	horizon := c.timestamp(n+ahead) - ts
	return 1 + r.long(max(horizon*2, 1))
}

// rng is a SplitMix64 stream seeded per event: cheap to seed, and the same
// family of generator as the SplittableRandom nexmark-flink draws from.
type rng struct{ s uint64 }

const golden = 0x9e3779b97f4a7c15

func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func newRNG(seed uint64, id int64) rng { return rng{s: mix64(seed ^ uint64(id)*golden)} }

func (r *rng) next() uint64 {
	r.s += golden
	return mix64(r.s)
}

// intn returns a uniform value in [0, n), n > 0 (Lemire's multiply-shift).
func (r *rng) intn(n int) int {
	return int((uint64(uint32(r.next())) * uint64(n)) >> 32)
}

// long is nexmark's LongGenerator.nextLong: uniform below 2^31, otherwise
// the remainder of a random long.
func (r *rng) long(n int64) int64 {
	if n < math.MaxInt32 {
		return int64(r.intn(int(n)))
	}
	v := int64(r.next()) % n
	if v < 0 {
		v = -v
	}
	return v
}

func (r *rng) float() float64 { return float64(r.next()>>11) * (1.0 / (1 << 53)) }

// price is nexmark's PriceGenerator: 10^U(0,6) dollars, in cents, rounded
// to the nearest cent: round(e^(u·6·ln 10) · 100) with math.Exp.
func (r *rng) price() int64 { return priceOf(r.float()) }

// priceOf computes slowPrice(u) without math.Exp for all but about two
// draws in ten thousand: fastExp's result differs from math.Exp's by far
// less than 10^-4 cents (relative error below 2·10^-13 on prices below 10^8
// cents: 2·10^-5 cents), so whenever the cents are more than 10^-4 away
// from a half both round to the same integer. Closer to a half the price is
// computed with math.Exp, so every price is the one slowPrice gives.
func priceOf(u float64) int64 {
	y := fastExp(u*(6*math.Ln10)) * 100
	c := int64(y) // y >= 100: truncation is the floor
	d := 0.5 - (y - float64(c))
	if math.Abs(d) < 1e-4 {
		return slowPrice(u)
	}
	// Up when the cents' fraction is above a half: the sign of d, without a
	// branch that would go either way at random.
	return c + int64(math.Float64bits(d)>>63)
}

func slowPrice(u float64) int64 { return int64(math.Round(math.Exp(u*(6*math.Ln10)) * 100)) }

// exp2Table[j] is 2^(j/256).
var exp2Table = func() (t [256]float64) {
	for j := range t {
		t[j] = math.Exp2(float64(j) / 256)
	}
	return t
}()

// fastExp is e^x for 0 <= x < 14 (prices up to 10^6 dollars) with a
// relative error below 2·10^-13: x = (256k + j)·ln2/256 + r with
// |r| <= ln2/512, e^x = 2^k · 2^(j/256) · e^r, and e^r from its Taylor
// polynomial of degree 4 (remainder below r^5/120 < 4·10^-17).
func fastExp(x float64) float64 {
	const invStep = 256 / math.Ln2
	// ln2/256 in two parts (math.Exp's): n·stepHi is exact for the n here.
	const stepHi, stepLo = 6.93147180369123816490e-01 / 256, 1.90821492927058770002e-10 / 256
	n := int(x*invStep + 0.5) // x >= 0: the nearest integer
	fn := float64(n)
	r := (x - fn*stepHi) - fn*stepLo
	r2 := r * r
	p := (1 + r) + r2*((1.0/2+r*(1.0/6))+r2*(1.0/24))
	pow2 := math.Float64frombits(uint64(1023+n>>8) << 52) // 2^(n/256 rounded down), exact
	return exp2Table[n&255] * p * pow2
}

// tables are the fixed strings the generator picks from. They are derived
// from a fixed seed, so every process generates the same events.
type tables struct {
	extra    string // a long random string; extras are substrings of it
	names    []string
	hotURLs  [4]string
	channels [numChannels]string
	chanURLs [numChannels]string
}

var (
	usStates    = []string{"AZ", "CA", "ID", "OR", "WA", "WY"}
	usCities    = []string{"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"}
	firstNames  = []string{"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"}
	lastNames   = []string{"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"}
	hotChannels = [4]string{"Google", "Facebook", "Baidu", "Apple"}
)

// tablesSeed seeds the fixed tables.
const tablesSeed = 0x6e65786d61726b

var sharedTables = sync.OnceValue(func() *tables {
	t := &tables{}
	r := rng{s: tablesSeed}
	b := make([]byte, reusableExtraLen)
	for i := range b {
		b[i] = byte('a' + r.intn(26))
	}
	t.extra = string(b)
	for _, f := range firstNames {
		for _, l := range lastNames {
			t.names = append(t.names, f+" "+l)
		}
	}
	baseURL := func() string {
		var u []byte
		u = append(u, "https://www.nexmark.com/"...)
		for range 3 {
			u = appendRandomString(u, &r, 5, '_')
			u = append(u, '/')
		}
		return string(append(u, "item.htm?query=1"...))
	}
	for i := range t.hotURLs {
		t.hotURLs[i] = baseURL()
	}
	for i := range numChannels {
		u := baseURL()
		if r.intn(10) > 0 {
			// Java's Math.abs(Integer.reverse(i)).
			rev := int32(reverse32(uint32(i)))
			if rev < 0 && rev != math.MinInt32 {
				rev = -rev
			}
			u += "&channel_id=" + strconv.Itoa(int(rev))
		}
		t.channels[i] = "channel-" + strconv.Itoa(i)
		t.chanURLs[i] = u
	}
	return t
})

func reverse32(x uint32) uint32 {
	var y uint32
	for range 32 {
		y = y<<1 | x&1
		x >>= 1
	}
	return y
}

// appendRandomString appends nexmark's nextString: 3 to maxLength-1
// characters, lower-case letters with one in 13 the special character, with
// leading and trailing spaces trimmed.
func appendRandomString(b []byte, r *rng, maxLength int, special byte) []byte {
	n := minStringLength + r.intn(maxLength-minStringLength)
	start := len(b)
	for range n {
		if r.intn(13) == 0 {
			b = append(b, special)
		} else {
			b = append(b, byte('a'+r.intn(26)))
		}
	}
	if special != ' ' {
		return b
	}
	s := b[start:]
	lo, hi := 0, len(s)
	for lo < hi && s[lo] == ' ' {
		lo++
	}
	for hi > lo && s[hi-1] == ' ' {
		hi--
	}
	if lo > 0 {
		copy(s, s[lo:hi])
	}
	return b[:start+hi-lo]
}

// extra is nexmark's nextExtra: a string that brings an event of
// currentSize bytes to avgSize on average (±20 %), cut from the shared
// random string.
func (t *tables) extraFor(r *rng, currentSize, avgSize int) string {
	if currentSize > avgSize {
		return ""
	}
	avgSize -= currentSize
	delta := int(math.Round(float64(avgSize) * 0.2))
	size := avgSize - delta
	if delta != 0 {
		size += r.intn(2 * delta)
	}
	if size >= len(t.extra) {
		size = len(t.extra) - 1
	}
	off := r.intn(len(t.extra) - size)
	return t.extra[off : off+size]
}
