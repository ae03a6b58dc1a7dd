// svc worker, part of lib/host.ps1 (compiled by lib/host/assembly.ps1): gives memory back to the
// system once the whole process has been idle for a while (docs/runspaces.md, "Memory"). After a
// burst the GC keeps the heap it grew to and glibc keeps the native memory freed into its arenas. One
// blocking, compacting, aggressive collection returns the former, malloc_trim(0) (Linux with glibc)
// the latter: an idle process with 2 workers went from 150-160 MB to 122-128 MB (the collection
// alone: -15 MB). It runs once per quiet period, never while a call of the process runs, so a call
// waits for it only when it arrives during it (the collection took 90-230 ms with 16 workers on a
// busy 2-core machine); the first call after it is a few ms slower, committing gen0 again.
using System;
using System.Diagnostics;
using System.Runtime;
using System.Runtime.InteropServices;
using System.Threading;

namespace Svc.Host
{
    /// <summary>The process's idle trim: every slot loop reports its activity and asks for the trim when it wakes idle.</summary>
    public static class IdleTrim
    {
        // Quiet time, in ms, after which the process's memory is trimmed: svc's -IdleTrimMs, set once
        // by host.ps1 before any user code runs, so no call can change what the next caller gets.
        private static long _quietMs = 5000;
        private static int _configured;

        /// <summary>Sets the quiet time before a trim; only the first call counts (host.ps1 makes it). @default 5000 ms</summary>
        public static void SetQuietTime(int milliseconds)
        {
            if (milliseconds > 0 && Interlocked.CompareExchange(ref _configured, 1, 0) == 0) Volatile.Write(ref _quietMs, milliseconds);
        }

        private static long _lastActivity = Stopwatch.GetTimestamp();
        private static int _running;
        private static int _trimming;
        private static bool _trimmed = true;
        private static bool _nativeTrim = RuntimeInformation.IsOSPlatform(OSPlatform.Linux);

        /// <summary>How many trims the process has done (the tests read it).</summary>
        public static int Count { get; private set; }

        /// <summary>A frame arrived or a call ended: the quiet period starts again.</summary>
        public static void Touch()
        {
            Volatile.Write(ref _lastActivity, Stopwatch.GetTimestamp());
            _trimmed = false;
        }

        /// <summary>A call of this process started.</summary>
        public static void CallStarted()
        {
            Interlocked.Increment(ref _running);
            Touch();
        }

        /// <summary>A call of this process ended.</summary>
        public static void CallEnded()
        {
            Interlocked.Decrement(ref _running);
            Touch();
        }

        /// <summary>
        /// Trims when no call runs, nothing happened for the quiet time and the process has not
        /// been trimmed since; one slot at a time. Called by idle slot loops about once a second.
        /// </summary>
        public static void MaybeTrim()
        {
            if (_trimmed || Volatile.Read(ref _running) > 0) return;
            long quiet = Stopwatch.GetTimestamp() - Volatile.Read(ref _lastActivity);
            if (quiet < Volatile.Read(ref _quietMs) * Stopwatch.Frequency / 1000) return;
            if (Interlocked.CompareExchange(ref _trimming, 1, 0) != 0) return;
            try
            {
                _trimmed = true;
                // Aggressive needs a blocking, compacting collection; it also decommits the free regions.
                GC.Collect(GC.MaxGeneration, GCCollectionMode.Aggressive, true, true);
                if (_nativeTrim)
                {
                    try { malloc_trim(UIntPtr.Zero); }
                    catch (Exception) { _nativeTrim = false; } // not glibc (musl has no malloc_trim)
                }
                Count++;
            }
            finally
            {
                Volatile.Write(ref _trimming, 0);
            }
        }

        [DllImport("libc.so.6", EntryPoint = "malloc_trim")]
        private static extern int malloc_trim(UIntPtr pad);
    }
}
