package dev.leader.docs.gettingstarted;

/**
 * The application's own service that {@link ReminderJob} calls.
 */
interface ReminderSender {

	void sendDueReminders();

}
