package join

import (
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state/kv"
)

// keptWatermark is the watermark a time-bounded join had at its last
// checkpoint, kept in keyed state: it decides which rows are late, and
// the runtime re-derives watermarks only after the first new one arrives.
// It is stored in every key group the instance owns, so after rescaling
// each new instance finds it; where key groups of several old instances
// meet, the lowest wins (a row late for one of them is not late for all).
type keptWatermark struct {
	b     *kv.Backend
	state *kv.ValueState[int64]
	saved int64 // the value in state; exec.MinWatermark for none
}

// openKeptWatermark declares the state and reads the restored watermark.
func openKeptWatermark(b *kv.Backend) (keptWatermark, error) {
	k := keptWatermark{b: b, saved: exec.MinWatermark}
	var err error
	if k.state, err = kv.NewValueState[int64](b, "watermark", kv.Int64{}, kv.Options{}); err != nil {
		return k, err
	}
	kgs := b.KeyGroups()
	for kg := kgs.First; kg <= kgs.Last; kg++ {
		if err := b.SetCurrentKeyInGroup(kg, timerKey); err != nil {
			return k, err
		}
		w, ok, err := k.state.Get(nil)
		if err != nil {
			return k, err
		}
		if ok && (k.saved == exec.MinWatermark || w < k.saved) {
			k.saved = w
		}
	}
	return k, nil
}

// save writes wm into every key group when it moved since the last save.
func (k *keptWatermark) save(wm int64) error {
	if wm == k.saved {
		return nil
	}
	kgs := k.b.KeyGroups()
	for kg := kgs.First; kg <= kgs.Last; kg++ {
		if err := k.b.SetCurrentKeyInGroup(kg, timerKey); err != nil {
			return err
		}
		if err := k.state.Put(nil, wm); err != nil {
			return err
		}
	}
	k.saved = wm
	return nil
}
