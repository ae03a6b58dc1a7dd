#Requires -Version 7.4
# svc worker: the PowerShell side of docs/worker-protocol.md. It runs requests in a separate runspace
# and reports raw facts; every policy decision (tool names, schemas, coercion, truncation, wording) is
# made in TypeScript. Frames travel over the socket named by -Endpoint, never over stdin/stdout, so
# nothing user code prints can corrupt them; stdout/stderr are diagnostics only.
[CmdletBinding()]
param([Parameter(Mandatory)][string]$Endpoint)

Set-StrictMode -Version 3.0
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'

# The parts, each one concern. svc writes them beside this file; dot-sourcing keeps their functions
# and script variables in this script's scope.
. (Join-Path $PSScriptRoot 'host/protocol.ps1')
. (Join-Path $PSScriptRoot 'host/runspace_state.ps1')
. (Join-Path $PSScriptRoot 'host/discovery.ps1')
. (Join-Path $PSScriptRoot 'host/reset.ps1')
. (Join-Path $PSScriptRoot 'host/operations.ps1')

# ---------------------------------------------------------------------------------------------------
# Host state (host runspace only).
# ---------------------------------------------------------------------------------------------------

$script:Worker = $null
$script:Reader = $null
$script:Writer = $null
$script:Running = $null
$script:Preload = $null
$script:Snapshot = $null
$script:EnvSnapshot = $null
$script:StrictMode = $null
# Host script block -> the same script compiled once in the worker runspace.
$script:CompiledScripts = [System.Collections.Generic.Dictionary[scriptblock, scriptblock]]::new()
$script:WorkerSessionState = $null
$script:EngineTables = $null
$script:CleanFingerprint = $null
$script:FastResetBroken = $false
$script:GlobalScope = $null
$script:StrictModeProperty = $null
# Module entry as given to startup (a name or a path) -> name of the module imported from it.
$script:ModuleNames = [System.Collections.Generic.Dictionary[string, string]]::new([System.StringComparer]::Ordinal)
$script:Quit = $false

# ---------------------------------------------------------------------------------------------------
# Main.
# ---------------------------------------------------------------------------------------------------

# Take the token, then drop it from the process environment: user code and the native programs it
# starts share this environment, and the token is not theirs to read.
$token = [string]$env:SVC_WORKER_TOKEN
[System.Environment]::SetEnvironmentVariable('SVC_WORKER_TOKEN', [NullString]::Value)
# Native programs started by user code are decoded with the console encoding; make it UTF-8.
try { [Console]::OutputEncoding = [System.Text.UTF8Encoding]::new($false) } catch { Write-Diag "cannot set the console encoding: $($_.Exception.Message)" }

$exitCode = 0
$hardExit = $false
try {
    $script:Worker = New-WorkerRunspace
    Start-WorkerPreload
    $stream = Connect-Endpoint $Endpoint
    $utf8 = [System.Text.UTF8Encoding]::new($false)
    # Full-arity constructors: each matches one overload with no optional parameters to fill in.
    $script:Reader = [System.IO.StreamReader]::new($stream, $utf8, $false, 65536, $false)
    $script:Writer = [System.IO.StreamWriter]::new($stream, $utf8, 65536, $false)
    $script:Writer.NewLine = "`n"
    $script:Writer.AutoFlush = $true

    Send-Frame (ConvertTo-Json -Compress -InputObject ([ordered]@{
                type      = 'hello'
                token     = $token
                protocol  = 1
                pid       = $PID
                psVersion = [string]$PSVersionTable['PSVersion']
                edition   = [string]$PSVersionTable['PSEdition']
                os        = [string]$PSVersionTable['OS']
            }))
    Remove-Variable -Name token -Scope Script

    # One pending read is kept across turns (a second ReadLineAsync while one is pending throws). The
    # loop waits on it and on the running invoke together, so a stop frame is seen while a command runs.
    $pending = $script:Reader.ReadLineAsync()
    while (-not $script:Quit) {
        $waitOn = if ($null -ne $script:Running) { @($pending, $script:Running.Task) } else { @($pending) }
        $null = [System.Threading.Tasks.Task]::WaitAny([System.Threading.Tasks.Task[]]$waitOn, 1000)
        if ($null -ne $script:Running -and $script:Running.Task.IsCompleted) { Complete-Invoke }
        if (-not $pending.IsCompleted) { continue }
        if ($pending.Status -ne [System.Threading.Tasks.TaskStatus]::RanToCompletion) {
            $why = if ($pending.IsFaulted) { $pending.Exception.GetBaseException().Message } else { [string]$pending.Status }
            Write-Diag "reading the socket failed: $why"
            break
        }
        $line = $pending.Result
        if ($null -eq $line) { break }
        $pending = $script:Reader.ReadLineAsync()
        try { Invoke-Frame $line } catch { Write-Diag "frame handling failed: $((Get-InnerException $_.Exception).Message)" }
    }
} catch {
    Write-Diag "fatal: $((Get-InnerException $_.Exception).Message)"
    $exitCode = 1
}

# The connection is gone (or exit was requested): stop what runs. Pipeline threads are foreground
# threads, so one that ignores the stop would keep the process alive after the script ends.
if ($null -ne $script:Running) {
    Stop-Running
    $finished = [System.Threading.Tasks.Task]::WaitAny([System.Threading.Tasks.Task[]]@($script:Running.Task), 5000)
    if ($finished -lt 0) { $hardExit = $true }
}
# The worker runspace is not closed: closing runs module OnRemove handlers and waits on jobs, and the
# process is about to end anyway. Disposing the writer closes the stream and the socket it owns.
if ($null -ne $script:Writer) { try { $script:Writer.Dispose() } catch { Write-Diag "closing the socket failed: $($_.Exception.Message)" } }
if ($hardExit) { [System.Environment]::Exit($exitCode) }
exit $exitCode
