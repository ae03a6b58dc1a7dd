#Requires -Version 7.4
# svc worker: the PowerShell side of docs/worker-protocol.md. It runs requests in separate runspaces
# and reports raw facts; every policy decision (tool names, schemas, coercion, truncation, wording) is
# made in TypeScript. Frames travel over the socket named by -Endpoint, never over stdin/stdout, so
# nothing user code prints can corrupt them; stdout/stderr are diagnostics only.
#
# The path every tool call takes (the frame loop, invoke, projection, encoding, the reset's fast
# path) is C# in lib/host/cs, compiled once and cached (lib/host/assembly.ps1); as script it cost
# about a millisecond per call. The rare operations stay PowerShell (docs/compiled-host.md).
#
# One process serves one or more slots. Each slot is a connection of its own with a worker runspace
# of its own (lib/host/slot.ps1); this script runs slot 0, svc asks for more with an `open` frame, and
# the process ends when its last slot has ended.
[CmdletBinding()]
param(
    [Parameter(Mandatory)][string]$Endpoint,
    # Where the compiled half of the host is kept between starts (lib/host/assembly.ps1); none: compiled in memory.
    [string]$AssemblyCache = '',
    # The digest of host/cs/*.cs as svc computed it (hostSourceDigest in lib/host_files.ts), which names
    # the cached assembly; none: computed here from the files.
    [string]$SourceDigest = '',
    # Quiet time, in ms, after which the process gives memory back (lib/host/cs/IdleTrim.cs).
    [int]$IdleTrimMs = 5000,
    # svc runs a private copy of the host per worker: remove its directory ($PSScriptRoot) on the
    # way out. svc removes it too once the process has ended, but not if svc itself was killed.
    [switch]$RemoveScriptDirectory
)

Set-StrictMode -Version 3.0
$ErrorActionPreference = 'Stop'

. ([System.IO.Path]::Combine($PSScriptRoot, 'host', 'protocol.ps1'))
. ([System.IO.Path]::Combine($PSScriptRoot, 'host', 'slot_runs.ps1'))
. ([System.IO.Path]::Combine($PSScriptRoot, 'host', 'assembly.ps1'))

# The way out, whichever it is: with -RemoveScriptDirectory the private copy of the host goes too.
function Exit-Host([int]$Code, [switch]$Abruptly) {
    if ($RemoveScriptDirectory) {
        try { [System.IO.Directory]::Delete($PSScriptRoot, $true) } catch { Write-Diag "cannot remove the host's directory: $($_.Exception.Message)" }
    }
    if ($Abruptly) { [System.Environment]::Exit($Code) }
    exit $Code
}

# Every slot of this process uses the compiled half; without it no request can be served. It comes
# first: the worker runspaces are created with its host (WorkerHost.cs).
try {
    Import-HostAssembly ([System.IO.Path]::Combine($PSScriptRoot, 'host')) $AssemblyCache $SourceDigest
} catch {
    Write-Diag "cannot load the compiled part of the host: $((Get-InnerException $_.Exception).Message)"
    Exit-Host 1 -Abruptly
}

[Svc.Host.IdleTrim]::SetQuietTime($IdleTrimMs)
# The engine members a reset reads are looked up once, now, before any slot starts; each slot's hello
# names those this PowerShell lacks (lib/host/cs/EngineMembers.cs).
$missing = [Svc.Host.EngineMembers]::Missing
if ($missing.Length -gt 0) { Write-Diag "this PowerShell lacks engine members a reset reads ($($missing -join ', ')): every reset retires the process" }

# Slot 0's worker runspace loads its modules on a thread of its own while this one parses the slot's
# scripts: on two cores that takes the runspace's ~200 ms off the way to slot 0's first answer.
try {
    $worker = New-WorkerRunspace
    $preload = Start-WorkerPreload $worker
} catch {
    Write-Diag "cannot open a worker runspace: $((Get-InnerException $_.Exception).Message)"
    Exit-Host 1 -Abruptly
}

# Take the token, then drop it from the process environment: user code and the native programs it
# starts share this environment, and the token is not theirs to read.
$token = [string]$env:SVC_WORKER_TOKEN
[System.Environment]::SetEnvironmentVariable('SVC_WORKER_TOKEN', [NullString]::Value)
# The variables svc set only for pwsh's own start (see workerEnvironment in lib/worker_process.ts)
# have been read by now; user code gets svc's environment without them.
foreach ($name in @(([string]$env:SVC_WORKER_STARTUP_ENV).Split(',', [StringSplitOptions]::RemoveEmptyEntries)) + 'SVC_WORKER_STARTUP_ENV') {
    [System.Environment]::SetEnvironmentVariable($name, [NullString]::Value)
}
# Native programs started by user code are decoded with the console encoding; make it UTF-8.
try { [Console]::OutputEncoding = [System.Text.UTF8Encoding]::new($false) } catch { Write-Diag "cannot set the console encoding: $($_.Exception.Message)" }

# What the slots of this process share, and the only thing they share (each slot's own state is in its
# runspace's script scope). Slots run on their own threads, hence synchronized tables
# (ConcurrentDictionary would cost ~50 ms of type resolution at every start). Every key:
#   Endpoint   where svc listens for the slots' connections (this script's parameter)
#   Token      the secret each slot's hello carries back to svc (read from the environment, removed)
#   SlotScript the path of host/slot.ps1, which Open-Slot runs for every further slot
#   Live       slot number -> $true, for each slot still connected (slot.ps1 adds and removes itself)
#   Runs       slot number -> runspace, pipeline and handle of each slot Open-Slot started
#              (operations.ps1; freed by Receive-SlotRun)
#   Stuck      set by a slot whose call ignored its stop: the process must end abruptly
#   Failed     set by a slot that failed: the process exits with code 1
$process = [hashtable]::Synchronized(@{
        Endpoint   = $Endpoint
        Token      = $token
        SlotScript = [System.IO.Path]::Combine($PSScriptRoot, 'host', 'slot.ps1')
        Live       = [hashtable]::Synchronized(@{})
        Runs       = [hashtable]::Synchronized(@{})
        Stuck      = $false
        Failed     = $false
    })
# Not Remove-Variable: that would load the Utility module into this runspace (~90 ms) for one line.
$ExecutionContext.SessionState.PSVariable.Remove('token')

& $process['SlotScript'] -Process $process -Slot 0 -Worker $worker -Preload $preload

# Slot 0 is gone; the others may serve on for a long time. Wait for each, then end the process.
# A slot may open another while this waits, so go round until none is left.
$runs = $process['Runs']
while ($runs.Count -gt 0) {
    foreach ($slot in @($runs.Clone().Keys)) { Receive-SlotRun $runs $slot }
}
# Pipeline threads are foreground threads: one that ignored its stop would keep the process alive
# after this script ends. The worker runspaces are not closed (that runs module OnRemove handlers
# and waits on jobs); the process is ending anyway.
Exit-Host -Code ([int]$process['Failed']) -Abruptly:($process['Stuck'])
