# svc worker, part of lib/host.ps1: one slot, that is one connection to svc and the worker runspace it
# drives. lib/host.ps1 runs slot 0 itself; each further slot runs this script in a runspace of its own
# (Open-Slot in operations.ps1), so the slots of one process run side by side on their own threads.
[CmdletBinding()]
param(
    # What the slots of this process share: Endpoint, Token, SlotScript, Slots and Stuck (see host.ps1).
    [Parameter(Mandatory)][hashtable]$Process,
    [Parameter(Mandatory)][int]$Slot,
    # The slot's worker runspace and its preload (Start-WorkerPreload), when host.ps1 started them
    # ahead (slot 0); otherwise the slot starts its own.
    [runspace]$Worker,
    [object]$Preload
)

Set-StrictMode -Version 3.0
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'

# The parts, each one concern; dot-sourcing keeps their functions and script variables in this
# script's scope, so every slot has its own. Paths are joined by .NET: Join-Path would load the
# Management module into this runspace (~150 ms per process) for nothing else.
. ([System.IO.Path]::Combine($PSScriptRoot, 'protocol.ps1'))
. ([System.IO.Path]::Combine($PSScriptRoot, 'runspace_state.ps1'))
. ([System.IO.Path]::Combine($PSScriptRoot, 'discovery.ps1'))
. ([System.IO.Path]::Combine($PSScriptRoot, 'completion.ps1'))
. ([System.IO.Path]::Combine($PSScriptRoot, 'reset.ps1'))
. ([System.IO.Path]::Combine($PSScriptRoot, 'operations.ps1'))
. ([System.IO.Path]::Combine($PSScriptRoot, 'projection.ps1'))
. ([System.IO.Path]::Combine($PSScriptRoot, 'slot_runs.ps1'))

# ---------------------------------------------------------------------------------------------------
# Slot state (this slot's host runspace only).
# ---------------------------------------------------------------------------------------------------

$script:Process = $Process
$script:Slot = $Slot
$script:Worker = $null
$script:Reader = $null
$script:Writer = $null
$script:Loop = $null
$script:Preload = $null
$script:Snapshot = $null
$script:ProcessState = $null
$script:StrictMode = $null
# Host script block -> the same script compiled once in the worker runspace.
$script:CompiledScripts = [System.Collections.Generic.Dictionary[scriptblock, scriptblock]]::new()
$script:WorkerSessionState = $null
$script:FastResetBroken = $false
$script:GlobalScope = $null
$script:StrictModeProperty = $null
# Module entry as given to startup (a name or a path) -> name of the module imported from it.
$script:ModuleNames = [System.Collections.Generic.Dictionary[string, string]]::new([System.StringComparer]::Ordinal)

# The loop encodes output, which runs type-data script properties written for non-strict code; they
# take the strict mode of the scope the loop was called from, which is this function's. The request
# callback puts the host's own strict mode back; the format-view lookup, which reads format data
# written for non-strict code too, keeps it off.
function Invoke-SlotLoop([Svc.Host.SlotLoop]$Loop) {
    Set-StrictMode -Off
    $Loop.Run()
}

# ---------------------------------------------------------------------------------------------------
# Main.
# ---------------------------------------------------------------------------------------------------

$Process['Live'][$Slot] = $true
[Svc.Host.Invocation]::CompletionScript = $CompletionScript.ToString()
try {
    # The host's own runspaces are not a call's leftovers (ProcessState.RetireReason).
    [Svc.Host.ProcessState]::AddHostRunspace([runspace]::DefaultRunspace)
    if ($null -ne $Worker) {
        $script:Worker = $Worker
        $script:Preload = $Preload
    } else {
        $script:Worker = New-WorkerRunspace
        $script:Preload = Start-WorkerPreload $script:Worker
    }
    $stream = Connect-Endpoint $Process['Endpoint']
    $utf8 = [System.Text.UTF8Encoding]::new($false)
    # Full-arity constructors: each matches one overload with no optional parameters to fill in.
    $script:Reader = [System.IO.StreamReader]::new($stream, $utf8, $false, 65536, $false)
    $script:Writer = [System.IO.StreamWriter]::new($stream, $utf8, 65536, $false)
    $script:Writer.NewLine = "`n"
    $script:Writer.AutoFlush = $true

    # Encoded by the compiled half: ConvertTo-Json would load the Utility module into this runspace
    # (about 90 ms at a process's start) for this one frame.
    Send-Frame ([Svc.Host.JsonValue]::Serialize([ordered]@{
                type      = 'hello'
                token     = $Process['Token']
                protocol  = 1
                slot      = $Slot
                pid       = $PID
                psVersion = [string]$PSVersionTable['PSVersion']
                edition   = [string]$PSVersionTable['PSEdition']
                os        = [string]$PSVersionTable['OS']
                # Members a reset reads that this PowerShell lacks (lib/host/cs/EngineMembers.cs).
                missingMembers = [Svc.Host.EngineMembers]::Missing
            }))

    $script:Loop = [Svc.Host.SlotLoop]::new($Slot, $script:Reader, $script:Writer, $script:Worker,
        { param($Id, $Op, $Params) Set-StrictMode -Version 3.0; Invoke-HostRequest $Id $Op $Params },
        [Svc.Host.OutputProjection]::new({ param($TypeNames) Get-FormatView $TypeNames }, $script:Worker))
    Invoke-SlotLoop $script:Loop
} catch {
    Write-Diag "slot ${Slot}: fatal: $((Get-InnerException $_.Exception).Message)"
    $Process['Failed'] = $true
}

# The connection is gone (or exit was requested): stop what runs. A pipeline thread that ignores the
# stop keeps the process alive after every script has ended, so host.ps1 is told to end it hard.
$stuck = $false
$running = if ($null -ne $script:Loop) { $script:Loop.Running } else { $null }
if ($null -ne $running) {
    $script:Loop.StopRunning()
    $finished = [System.Threading.Tasks.Task]::WaitAny([System.Threading.Tasks.Task[]]@($running.Task), 5000)
    if ($finished -lt 0) { $stuck = $true; $Process['Stuck'] = $true }
}
if ($null -ne $script:Writer) {
    # A graceful shutdown first: the reader thread's blocking read then ends with end-of-file on every
    # platform, and the close cannot turn abortive (a reset) and drop the last reply on its way.
    try { $script:Writer.BaseStream.Socket.Shutdown([System.Net.Sockets.SocketShutdown]::Both) }
    catch { <# the connection is already gone #> }
    # Disposing the writer closes the stream and the socket it owns.
    try { $script:Writer.Dispose() } catch { Write-Diag "slot ${Slot}: closing the socket failed: $($_.Exception.Message)" }
}
# The worker runspace is freed only while the process goes on serving other slots: closing runs
# module OnRemove handlers, and a process about to end need not wait for them.
$others = $Process['Live'].Count - 1
$Process['Live'].Remove($Slot)
if ($null -ne $script:Worker -and -not $stuck -and $others -gt 0) {
    try { $script:Worker.Dispose() } catch { Write-Diag "slot ${Slot}: closing the worker runspace failed: $($_.Exception.Message)" }
}
