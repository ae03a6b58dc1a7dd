# svc worker, part of lib/host.ps1 (dot-sourced by it and by lib/host/slot.ps1): the slots a process
# opened, kept in the shared Runs table, and how each is taken out of it and ended.

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
