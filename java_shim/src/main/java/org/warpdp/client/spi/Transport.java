package org.warpdp.client.spi;

import java.util.List;

import org.warpdp.client.AlignParams;
import org.warpdp.client.AlignResults;
import org.warpdp.client.EditParams;
import org.warpdp.client.EditResults;
import org.warpdp.client.PairHmmBatches;
import org.warpdp.client.QueryTargetPairs;
import org.warpdp.client.SeedExtPairs;
import org.warpdp.client.SeedExtParams;
import org.warpdp.client.SeedExtResults;
import org.warpdp.client.ServerInfo;
import org.warpdp.client.WarpdpException;
import org.warpdp.client.XdropPairs;
import org.warpdp.client.XdropParams;
import org.warpdp.client.XdropResults;

/**
 * The wire side of {@link org.warpdp.client.WarpdpClient}, implemented over gRPC (relocated in the shaded
 * jar). Only JDK and {@code org.warpdp.client} types cross this boundary, so the public API names no gRPC,
 * protobuf, netty or guava type. Failures are {@link WarpdpException}s. Each algorithm has one method here, taking its packed input class.
 */
public interface Transport extends AutoCloseable {

    /** Health status name of {@code service} ("SERVING", "NOT_SERVING", ...); throws when the call fails. */
    String health(String service, long timeoutMillis);

    ServerInfo serverInfo(long timeoutMillis);

    /**
     * Scores the requests (each within the server's limits) and writes their likelihoods, concatenated, to
     * {@code out} from {@code offset}. One request is a unary call; several go over PairHmmStream.
     *
     * @param deadlineMillis per call; 0 for none
     */
    void pairHmm(List<PairHmmBatches> requests, boolean useDouble, double[] out, int offset,
                 long deadlineMillis);

    /** X-drop of the requests (each within the limits), results from pair {@code offset} of {@code out} on;
     * one request is an Xdrop call, several go over XdropStream. */
    void xdrop(List<XdropPairs> requests, XdropParams params, XdropResults out, int offset, long deadlineMillis);

    /** Seed extension of the requests, as {@link #xdrop} (SeedExtend / SeedExtendStream). */
    void seedExtend(List<SeedExtPairs> requests, SeedExtParams params, SeedExtResults out, int offset,
                    long deadlineMillis);

    /** Alignment of the requests, as {@link #xdrop} (Align / AlignStream); CIGARs when {@code out} has room. */
    void align(List<QueryTargetPairs> requests, AlignParams params, AlignResults out, int offset, long deadlineMillis);

    /** Edit distance of the requests, as {@link #xdrop} (Edit / EditStream). */
    void edit(List<QueryTargetPairs> requests, EditParams params, EditResults out, int offset, long deadlineMillis);

    /** Shuts the channel down. */
    @Override
    void close();
}
