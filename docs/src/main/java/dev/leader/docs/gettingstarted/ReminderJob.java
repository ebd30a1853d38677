package dev.leader.docs.gettingstarted;

import dev.leader.LeaderOnly;

import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

// tag::reminders[]
@Component
class ReminderJob {

	private final ReminderSender sender;

	ReminderJob(ReminderSender sender) {
		this.sender = sender;
	}

	@LeaderOnly // group "default": runs only on the instance that leads it
	@Scheduled(fixedDelay = 60_000) // every instance schedules it
	void sendReminders() {
		this.sender.sendDueReminders();
	}

}
// end::reminders[]
