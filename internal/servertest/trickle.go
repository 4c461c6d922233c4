package servertest

import (
	"net"
	"sync"
	"time"
)

// Trickle writes b to conn every period, in the background, until stop is
// called (stop may be called more than once) or a write fails: a client
// that sends its bytes too slowly.
func Trickle(conn net.Conn, b []byte, period time.Duration) (stop func()) {
	done := make(chan struct{})
	var once sync.Once
	go func() {
		tk := time.NewTicker(period)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-tk.C:
				if _, err := conn.Write(b); err != nil {
					return
				}
			}
		}
	}()
	return func() { once.Do(func() { close(done) }) }
}
