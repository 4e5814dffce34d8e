package org.warpdp.client.grpc;

import java.nio.ByteOrder;
import java.nio.IntBuffer;
import java.nio.LongBuffer;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnsafeByteOperations;

import io.grpc.stub.StreamObserver;

import org.warpdp.client.AlignParams;
import org.warpdp.client.AlignResults;
import org.warpdp.client.EditParams;
import org.warpdp.client.EditResults;
import org.warpdp.client.QueryTargetPairs;
import org.warpdp.client.WarpdpException;
import org.warpdp.v1.AlignReply;
import org.warpdp.v1.AlignRequest;
import org.warpdp.v1.EditReply;
import org.warpdp.v1.EditRequest;
import org.warpdp.v1.WarpdpGrpc;

/**
 * The Align and Edit calls of {@link GrpcTransport}: query/target pairs in, int64 columns and ragged
 * arrays (CIGARs, edit locations) out, each reply's ragged arrays cut into per-pair Java arrays.
 */
final class RaggedRpcs {
    private RaggedRpcs() {
    }

    static GrpcTransport.Rpc<QueryTargetPairs, AlignRequest, AlignReply> align(GrpcTransport t, AlignParams params,
                                                                               AlignResults out) {
        return new GrpcTransport.Rpc<>() {
            @Override
            public String name() {
                return "Align";
            }

            @Override
            public long pairs(QueryTargetPairs job) {
                return job.nPairs();
            }

            @Override
            public AlignRequest request(QueryTargetPairs p) {
                org.warpdp.v1.AlignPairs packed = org.warpdp.v1.AlignPairs.newBuilder()
                        .setQueryBases(UnsafeByteOperations.unsafeWrap(p.query()))
                        .setQueryOffsets(GrpcTransport.int64(p.queryOffsets()))
                        .setTargetBases(UnsafeByteOperations.unsafeWrap(p.target()))
                        .setTargetOffsets(GrpcTransport.int64(p.targetOffsets()))
                        .build();
                AlignRequest.Builder r = AlignRequest.newBuilder().setPairs(packed)
                        .setMode(params.mode().wireName()).setMatch(params.match()).setMismatch(params.mismatch())
                        .setGaps(params.gaps().wireName()).setGapOpen(params.gapOpen())
                        .setGapExtend(params.gapExtend()).setGapConvention(params.gapConvention().wireName())
                        .setOverhang(params.overhang().name()).setCigar(params.traceback());
                int[] matrix = params.matrix();
                if (matrix != null) {
                    long[] values = new long[matrix.length];
                    for (int i = 0; i < matrix.length; i++) {
                        values[i] = matrix[i];
                    }
                    r.setMatrix(GrpcTransport.int64(values));
                }
                if (params.zdrop() != null) {
                    r.setZdrop(params.zdrop());
                }
                return r.build();
            }

            @Override
            public AlignReply unary(WarpdpGrpc.WarpdpBlockingStub stub, AlignRequest request) {
                return stub.align(request);
            }

            @Override
            public void stream(WarpdpGrpc.WarpdpStub stub, StreamObserver<AlignReply> replies) {
                stub.alignStream(replies);
            }

            @Override
            public long chunk(AlignReply reply) {
                return reply.getChunk();
            }

            @Override
            public void store(AlignReply r, int from, int to, String what) {
                ByteString[] columns = {r.getScore(), r.getQueryBegin(), r.getQueryEnd(), r.getTargetBegin(),
                    r.getTargetEnd()};
                long[][] into = {out.score(), out.queryBegin(), out.queryEnd(), out.targetBegin(), out.targetEnd()};
                for (int c = 0; c < columns.length; c++) {
                    t.longs(columns[c], to - from, what).get(into[c], from, to - from);
                }
                if (out.cigars() != null) {
                    cigars(t, r.getCigarOps(), r.getCigarOffsets(), from, to - from, out.cigars(), what);
                }
            }
        };
    }

    static GrpcTransport.Rpc<QueryTargetPairs, EditRequest, EditReply> edit(GrpcTransport t, EditParams params,
                                                                            EditResults out) {
        return new GrpcTransport.Rpc<>() {
            @Override
            public String name() {
                return "Edit";
            }

            @Override
            public long pairs(QueryTargetPairs job) {
                return job.nPairs();
            }

            @Override
            public EditRequest request(QueryTargetPairs p) {
                org.warpdp.v1.EditPairs packed = org.warpdp.v1.EditPairs.newBuilder()
                        .setQueryBases(UnsafeByteOperations.unsafeWrap(p.query()))
                        .setQueryOffsets(GrpcTransport.int64(p.queryOffsets()))
                        .setTargetBases(UnsafeByteOperations.unsafeWrap(p.target()))
                        .setTargetOffsets(GrpcTransport.int64(p.targetOffsets()))
                        .build();
                return EditRequest.newBuilder().setPairs(packed).setMode(params.mode().wireName()).setK(params.k())
                        .setTask(params.task().wireName()).setMethod(params.method().wireName())
                        .setWindow(params.window()).setOverlap(params.overlap())
                        .build();
            }

            @Override
            public EditReply unary(WarpdpGrpc.WarpdpBlockingStub stub, EditRequest request) {
                return stub.edit(request);
            }

            @Override
            public void stream(WarpdpGrpc.WarpdpStub stub, StreamObserver<EditReply> replies) {
                stub.editStream(replies);
            }

            @Override
            public long chunk(EditReply reply) {
                return reply.getChunk();
            }

            @Override
            public void store(EditReply r, int from, int to, String what) {
                ByteString[] columns = {r.getDistance(), r.getTargetBegin(), r.getTargetEnd()};
                long[][] into = {out.distance(), out.targetBegin(), out.targetEnd()};
                for (int c = 0; c < columns.length; c++) {
                    t.longs(columns[c], to - from, what).get(into[c], from, to - from);
                }
                int n = to - from;
                if (out.cigars() != null) {
                    cigars(t, r.getCigarOps(), r.getCigarOffsets(), from, n, out.cigars(), what);
                }
                if (out.locationBegins() != null) {
                    if (r.getLocOffsets().isEmpty()) {
                        throw new WarpdpException("INTERNAL", "server " + t.target() + " sent no locations in " + what);
                    }
                    LongBuffer offsets = t.longs(r.getLocOffsets(), n + 1, what);
                    long total = offsets.get(n);
                    LongBuffer begins = t.longs(r.getLocBegin(), (int) Math.min(total, Integer.MAX_VALUE), what);
                    LongBuffer ends = t.longs(r.getLocEnd(), (int) Math.min(total, Integer.MAX_VALUE), what);
                    for (int i = 0; i < n; i++) {
                        out.locationBegins()[from + i] = longs(begins, offsets.get(i), offsets.get(i + 1), t, what);
                        out.locationEnds()[from + i] = longs(ends, offsets.get(i), offsets.get(i + 1), t, what);
                    }
                }
            }
        };
    }

    // Values a .. b-1 of a ragged array, checked against its size.
    /** Pairs from..from+n of a reply's ragged CIGARs (packed ops + n + 1 offsets) into {@code into}. */
    private static void cigars(GrpcTransport t, ByteString opsBytes, ByteString offsetBytes, int from, int n,
                               int[][] into, String what) {
        if (offsetBytes.isEmpty()) {
            throw new WarpdpException("INTERNAL", "server " + t.target() + " sent no CIGARs in " + what);
        }
        IntBuffer ops = opsBytes.asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN).asIntBuffer();
        LongBuffer offsets = t.longs(offsetBytes, n + 1, what);
        for (int i = 0; i < n; i++) {
            into[from + i] = ints(ops, offsets.get(i), offsets.get(i + 1), t, what);
        }
    }

    private static int[] ints(IntBuffer values, long a, long b, GrpcTransport t, String what) {
        checkRange(a, b, values.limit(), t, what);
        int[] out = new int[(int) (b - a)];
        values.get((int) a, out);
        return out;
    }

    private static long[] longs(LongBuffer values, long a, long b, GrpcTransport t, String what) {
        checkRange(a, b, values.limit(), t, what);
        long[] out = new long[(int) (b - a)];
        values.get((int) a, out);
        return out;
    }

    private static void checkRange(long a, long b, int size, GrpcTransport t, String what) {
        if (a < 0 || b < a || b > size) {
            throw new WarpdpException("INTERNAL", "server " + t.target() + " sent ragged offsets " + a + ".." + b
                    + " outside its " + size + " values in " + what);
        }
    }
}
