package ports

import (
	"net"
	"strconv"
	"testing"
)

func TestFreeIsBindableOutsideTheEphemeralRangeAndNeverRepeated(t *testing.T) {
	lo, hi := span()
	if lo >= hi {
		t.Fatalf("empty span [%d, %d)", lo, hi)
	}
	seen := map[int]bool{}
	for range 50 {
		p, err := Free()
		if err != nil {
			t.Fatal(err)
		}
		if p < lo || p >= hi {
			t.Fatalf("port %d outside [%d, %d)", p, lo, hi)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d is not bindable: %v", p, err)
		}
		l.Close()
	}
}
