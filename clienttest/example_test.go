package clienttest

import (
	"context"
	"fmt"
	"log"
	"time"

	"spangle/client"
)

// exampleServer is the storaged that TestMain runs for the examples.
func exampleServer() string { return exampleBase }

func ExampleClient_MultiGet() {
	c, err := client.New(exampleServer(), client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	b, err := c.MultiGet(ctx, "users", [][]byte{[]byte("alice"), []byte("bob"), []byte("carol")})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("version %s: alice=%s bob=%s, missing %q\n", b.Version, b.Found["alice"], b.Found["bob"], b.Missing)

	v, err := c.Get(ctx, "users", []byte("carol"), client.Pin(b.Version))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("carol found:", v.Found)
	// Output:
	// version v1: alice=admin bob=reader, missing ["carol"]
	// carol found: false
}
