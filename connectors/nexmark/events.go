package nexmark

import (
	"unsafe"

	"github.com/flinksql/flinksql/types"
)

// Widths of the nested rows of the datagen table.
const (
	personWidth  = 8
	auctionWidth = 10
	bidWidth     = 7
	tableWidth   = 4 // event_type, person, auction, bid
)

// arena hands out the memory of nested rows and generated strings in chunks,
// so that generating an event allocates nothing of its own. A chunk is never
// reused: rows handed downstream may be kept (shallow copies share the
// nested values), so their memory must stay immutable.
type arena struct {
	vals  []types.Value
	rows  []types.Row
	bytes []byte
}

const (
	valsChunk  = 8 << 10
	rowsChunk  = 1 << 10
	bytesChunk = 64 << 10
)

func (a *arena) values(n int) []types.Value {
	if len(a.vals) < n {
		a.vals = make([]types.Value, valsChunk)
	}
	v := a.vals[:n:n]
	a.vals = a.vals[n:]
	return v
}

// rowValue returns a ROW value holding vals. The interface that carries the
// row points at a Row header inside a chunk instead of a header of its own on
// the heap, which is what converting a slice to an interface would allocate
// for every row.
func (a *arena) rowValue(vals []types.Value) types.Value {
	if len(a.rows) == 0 {
		a.rows = make([]types.Row, rowsChunk)
	}
	p := &a.rows[0]
	*p = vals
	a.rows = a.rows[1:]
	var x any
	e := (*eface)(unsafe.Pointer(&x))
	e.typ, e.data = rowTypeWord, unsafe.Pointer(p)
	return types.Value{K: types.KindRow, X: x}
}

// eface is the layout of an empty interface in the gc toolchain.
type eface struct {
	typ, data unsafe.Pointer
}

// rowTypeWord is the type word of an interface holding a types.Row.
var rowTypeWord = func() unsafe.Pointer {
	var x any = types.Row(nil)
	return (*eface)(unsafe.Pointer(&x)).typ
}()

// grow makes room for at least n more bytes in the current byte chunk.
func (a *arena) grow(n int) {
	if cap(a.bytes)-len(a.bytes) < n {
		a.bytes = make([]byte, 0, max(bytesChunk, n))
	}
}

// str returns the bytes appended to the chunk since start as a string. The
// chunk's bytes before its length are never written again.
func (a *arena) str(start int) string {
	if len(a.bytes) == start {
		return ""
	}
	return unsafe.String(&a.bytes[start], len(a.bytes)-start)
}

// generator fills rows of the datagen table with the events of one
// configuration.
type generator struct {
	cfg  *genConfig
	tab  *tables
	seed uint64
	a    arena
}

func newGenerator(cfg *genConfig, seed uint64) *generator {
	return &generator{cfg: cfg, tab: sharedTables(), seed: seed}
}

// fill writes the event with index i into row (of tableWidth values, NULL on
// entry).
func (g *generator) fill(row types.Row, i int64) {
	n, id := i+1, i+2
	ts := g.cfg.timestamp(n)
	r := newRNG(g.seed, id)
	switch g.cfg.kind(id) {
	case KindPerson:
		row[0] = types.Int(KindPerson)
		row[1] = g.person(id, ts, &r)
	case KindAuction:
		row[0] = types.Int(KindAuction)
		row[2] = g.auction(n, id, ts, &r)
	default:
		row[0] = types.Int(KindBid)
		row[3] = g.bid(id, ts, &r)
	}
}

func (g *generator) person(id, ts int64, r *rng) types.Value {
	c, t := g.cfg, g.tab
	v := g.a.values(personWidth)
	name := t.names[r.intn(len(firstNames))*len(lastNames)+r.intn(len(lastNames))]
	g.a.grow(64)
	start := len(g.a.bytes)
	b := appendRandomString(g.a.bytes, r, 7, ' ')
	b = append(b, '@')
	b = appendRandomString(b, r, 5, ' ')
	g.a.bytes = append(b, ".com"...)
	email := g.a.str(start)
	start = len(g.a.bytes)
	b = g.a.bytes
	for k := range 4 {
		if k > 0 {
			b = append(b, ' ')
		}
		d := r.intn(10000)
		b = append(b, byte('0'+d/1000), byte('0'+d/100%10), byte('0'+d/10%10), byte('0'+d%10))
	}
	g.a.bytes = b
	card := g.a.str(start)
	city := usCities[r.intn(len(usCities))]
	state := usStates[r.intn(len(usStates))]
	size := 8 + len(name) + len(email) + len(card) + len(city) + len(state)
	v[0] = types.Int(c.lastPerson(id) + firstPersonID)
	v[1] = types.String(name)
	v[2] = types.String(email)
	v[3] = types.String(card)
	v[4] = types.String(city)
	v[5] = types.String(state)
	v[6] = types.TimestampMillis(ts)
	v[7] = types.String(t.extraFor(r, size, c.avgPersonSize))
	return g.a.rowValue(v)
}

func (g *generator) auction(n, id, ts int64, r *rng) types.Value {
	c, t := g.cfg, g.tab
	v := g.a.values(auctionWidth)
	var seller int64
	if r.intn(c.hotSellersRatio) > 0 {
		seller = c.lastPerson(id) / hotSellerBase * hotSellerBase
	} else {
		seller = c.randomPerson(id, r)
	}
	category := int64(firstCategoryID + r.intn(numCategories))
	initialBid := r.price()
	expires := ts + c.auctionLength(n, ts, r)
	g.a.grow(128)
	start := len(g.a.bytes)
	g.a.bytes = appendRandomString(g.a.bytes, r, 20, ' ')
	item := g.a.str(start)
	start = len(g.a.bytes)
	g.a.bytes = appendRandomString(g.a.bytes, r, 100, ' ')
	desc := g.a.str(start)
	reserve := initialBid + r.price()
	size := 8 + len(item) + len(desc) + 8*5
	v[0] = types.Int(c.lastAuction(id) + firstAuctionID)
	v[1] = types.String(item)
	v[2] = types.String(desc)
	v[3] = types.Int(initialBid)
	v[4] = types.Int(reserve)
	v[5] = types.TimestampMillis(ts)
	v[6] = types.TimestampMillis(expires)
	v[7] = types.Int(seller + firstPersonID)
	v[8] = types.Int(category)
	v[9] = types.String(t.extraFor(r, size, c.avgAuctionSize))
	return g.a.rowValue(v)
}

func (g *generator) bid(id, ts int64, r *rng) types.Value {
	c, t := g.cfg, g.tab
	v := g.a.values(bidWidth)
	var auction, bidder int64
	if r.intn(c.hotAuctionRatio) > 0 {
		auction = c.lastAuction(id) / hotAuctionBase * hotAuctionBase
	} else {
		auction = c.randomAuction(id, r)
	}
	if r.intn(c.hotBiddersRatio) > 0 {
		bidder = c.lastPerson(id)/hotBidderBase*hotBidderBase + 1
	} else {
		bidder = c.randomPerson(id, r)
	}
	price := r.price()
	var channel, url string
	if r.intn(hotChannelsRatio) > 0 {
		k := r.intn(len(hotChannels))
		channel, url = hotChannels[k], t.hotURLs[k]
	} else {
		k := r.intn(numChannels)
		channel, url = t.channels[k], t.chanURLs[k]
	}
	v[0] = types.Int(auction + firstAuctionID)
	// nexmark-flink's BidGenerator adds FIRST_PERSON_ID to the bidder twice;
	// the published results have bidders 2000 and up, and so do ours.
	v[1] = types.Int(bidder + 2*firstPersonID)
	v[2] = types.Int(price)
	v[3] = types.String(channel)
	v[4] = types.String(url)
	v[5] = types.TimestampMillis(ts)
	v[6] = types.String(t.extraFor(r, 32, c.avgBidSize))
	return g.a.rowValue(v)
}
