// Detail is a payload class of one's own for the discovery interop tests
// (package internal/curator): a plain Jackson bean, as a Curator
// application's ServiceDiscovery<Detail> would use.
package zkrecipes;

/** A service instance's payload: a zone and a weight. */
public class Detail {
    public String zone;
    public int weight;

    public Detail() {
    }
}
