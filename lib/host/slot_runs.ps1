# svc worker, part of lib/host.ps1 (dot-sourced by it and by lib/host/slot.ps1): how a slot's worker
# runspace is started, and the slots a process opened, kept in the shared Runs table, and how each is
# taken out of it and ended.

# A slot's worker runspace, open, with a host of svc's own (WorkerHost.cs): prompts (Read-Host,
# Get-Credential, confirmations) fail at once as they did with the engine's default host, unless the
# call running is interactive (protocol §4.4).
function New-WorkerRunspace {
    # CreateDefault2 is what the console host uses: only Core is loaded, the rest autoloads, so built-in
    # commands report the same Module/Version as in an interactive pwsh.
    $iss = [System.Management.Automation.Runspaces.InitialSessionState]::CreateDefault2()
    $runspace = [Svc.Host.WorkerHost]::CreateRunspace($iss)
    # One pipeline thread for the runspace's life rather than a new thread per invocation: a no-op
    # call 2.98 -> 2.15 ms on pwsh 7.6.5. A call that ignores Stop blocks that thread, but such a
    # worker is killed anyway.
    $runspace.ThreadOptions = [System.Management.Automation.Runspaces.PSThreadOptions]::ReuseThread
    # Counted as the host's before it opens: a sibling's reset that ran between the two would take
    # it for a runspace a call left open and retire the process (every reset did, while the pool grew).
    [Svc.Host.ProcessState]::AddHostRunspace($runspace)
    $runspace.Open()
    [Svc.Host.WorkerHost]::Of($runspace).Settle()
    # Verbose and debug records are kept only under Continue (nothing is printed without a host UI);
    # TypeScript decides what to show. Progress records are never reported, so do not store them.
    $runspace.SessionStateProxy.SetVariable('VerbosePreference', [System.Management.Automation.ActionPreference]::Continue)
    $runspace.SessionStateProxy.SetVariable('DebugPreference', [System.Management.Automation.ActionPreference]::Continue)
    $runspace.SessionStateProxy.SetVariable('ProgressPreference', [System.Management.Automation.ActionPreference]::SilentlyContinue)
    return $runspace
}

# What a new worker runspace runs before its first request: Utility and Management, which every
# worker needs (the snapshot uses them, as do most calls) and which take about 200 ms to load in a new
# runspace; then, once, the commands the startup snapshot runs (runspace_state.ps1), whose first run in
# a process costs more than the snapshot itself. All of it read-only, in a local scope, errors
# ignored: it leaves nothing in the runspace that startup would record.
$PreloadScript = {
    Microsoft.PowerShell.Core\Import-Module -Name @('Microsoft.PowerShell.Utility', 'Microsoft.PowerShell.Management') -ErrorAction Ignore
    $null = Microsoft.PowerShell.Utility\Get-Variable -Scope Global -ErrorAction Ignore
    $null = Microsoft.PowerShell.Management\Get-ChildItem -Path Function: -ErrorAction Ignore
    $null = Microsoft.PowerShell.Management\Get-PSDrive -ErrorAction Ignore
    $null = Microsoft.PowerShell.Management\Get-Location -ErrorAction Ignore
    $null = Microsoft.PowerShell.Core\Get-Job -ErrorAction Ignore
    $null = Microsoft.PowerShell.Utility\Get-EventSubscriber -Force -ErrorAction Ignore
    $null = Microsoft.PowerShell.Utility\Get-PSBreakpoint -ErrorAction Ignore
    $null = Microsoft.PowerShell.Core\Get-Module -ErrorAction Ignore
}

# Starts $PreloadScript in the worker runspace: it runs on the runspace's own thread while the host
# goes on starting; Complete-WorkerPreload (operations.ps1) waits for it.
function Start-WorkerPreload([runspace]$Worker) {
    $ps = [powershell]::Create($Worker)
    $null = $ps.AddScript($PreloadScript.ToString(), $true)
    return [pscustomobject]@{ PowerShell = $ps; Result = $ps.BeginInvoke() }
}

# Takes slot $Slot's run out of $Runs, waits for it to end, and frees its pipeline and runspace. With
# -Ended a run still going is left in place. The take-out is under the table's lock: host.ps1 and
# the slots opening others look at the table at the same time, and each run must be ended once.
function Receive-SlotRun([hashtable]$Runs, [int]$Slot, [switch]$Ended) {
    $run = $null
    [System.Threading.Monitor]::Enter($Runs.SyncRoot)
    try {
        $run = $Runs[$Slot]
        if ($null -ne $run -and (-not $Ended -or $run.Handle.IsCompleted)) { $Runs.Remove($Slot) } else { $run = $null }
    } finally {
        [System.Threading.Monitor]::Exit($Runs.SyncRoot)
    }
    if ($null -eq $run) { return }
    try { $null = $run.PowerShell.EndInvoke($run.Handle) } catch { Write-Diag "slot ${Slot} failed: $((Get-InnerException $_.Exception).Message)" }
    $run.PowerShell.Dispose()
    $run.Runspace.Dispose()
}
